//! The answer key of the scored sets servebench generates (`dataset: {generate: …}`): their
//! prompts' fixed leads, and the right answer read back from a prompt, so the simulator can
//! answer a generated set (a seeded `correct_share` of it right).

/// A copy row: the words after this lead, repeated.
pub const COPY_LEAD: &str = "Write the words ";
/// An arithmetic row: `What is A + B? Answer with the number only.`
pub const ARITHMETIC_LEAD: &str = "What is ";
/// A JSON row: the object's `city` after this lead.
pub const JSON_LEAD: &str = "Reply with only the value of \"city\" in this JSON: ";

/// The right answer to a generated row's prompt; `None` for any other prompt.
pub fn answer(prompt: &str) -> Option<String> {
    // Anything before the lead (a run's salt words) is not the row's.
    let after = |lead: &str| prompt.find(lead).map(|at| &prompt[at + lead.len()..]);
    if let Some(text) = after(COPY_LEAD) {
        return Some(text.to_string());
    }
    if let Some(rest) = after(ARITHMETIC_LEAD).filter(|r| r.contains(" + ")) {
        let (a, rest) = rest.split_once(" + ")?;
        let (b, _) = rest.split_once('?')?;
        let sum = a.trim().parse::<u64>().ok()? + b.trim().parse::<u64>().ok()?;
        return Some(sum.to_string());
    }
    let object = after(JSON_LEAD)?;
    let value: serde_json::Value = serde_json::from_str(object).ok()?;
    value.get("city")?.as_str().map(str::to_string)
}

/// A wrong answer in place of `right`: a number one off, any other text with a word more.
pub fn wrong(right: &str) -> String {
    match right.parse::<u64>() {
        Ok(n) => (n + 1).to_string(),
        Err(_) => format!("{right} again"),
    }
}
