//! `repeat` groups: a phase entry `{repeat: {times, order, seed}, phases: [...]}` becomes one
//! phase per arm and round, named `ARM/round-N` and marked with its [`Round`], in the
//! group's order. This runs before validation (like `include`), so the phases it makes are
//! checked and expanded like any other and errors point into the group.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};

use crate::plan::repeat::{MAX_ROUNDS, RepeatOrder};
use crate::plan::schema::{Issue, describe_value};
use crate::plan::source::SourceMap;

/// A group's settings, read from its `repeat` mapping.
struct Spec {
    times: u32,
    order: RepeatOrder,
    seed: u64,
}

/// One group as written: its name, settings and arms.
struct Group {
    name: String,
    spec: Spec,
    arms: Vec<Map<String, Value>>,
}

/// The document with every repeat group replaced by its rounds, and a source map that
/// points each made phase at the phase it repeats; `None` when the plan has no group.
pub fn flatten(doc: &Value, map: &SourceMap) -> Result<Option<(Value, SourceMap)>, Vec<Issue>> {
    let Some(phases) = doc.get("phases").and_then(Value::as_array) else {
        return Ok(None);
    };
    if !phases.iter().any(is_group) {
        return Ok(None);
    }
    let mut out: Vec<Value> = Vec::new();
    let mut new_map = map.clone();
    let mut issues = Vec::new();
    let mut groups = 0;
    for (i, entry) in phases.iter().enumerate() {
        let pointer = format!("/phases/{i}");
        if !is_group(entry) {
            if out.len() != i {
                new_map.overlay(format!("/phases/{}", out.len()), pointer, map.clone());
            }
            out.push(entry.clone());
            continue;
        }
        groups += 1;
        let Some(group) = read_group(entry, &pointer, groups, &mut issues) else {
            continue;
        };
        for (round, arm) in order(&group.spec, group.arms.len()) {
            let made = round_phase(&group.arms[arm], &group.name, round, group.spec.times);
            new_map.overlay(
                format!("/phases/{}", out.len()),
                format!("{pointer}/phases/{arm}"),
                map.clone(),
            );
            out.push(made);
        }
    }
    if !issues.is_empty() {
        return Err(issues);
    }
    let mut doc = doc.clone();
    if let Some(obj) = doc.as_object_mut() {
        obj.insert("phases".into(), Value::Array(out));
    }
    Ok(Some((doc, new_map)))
}

fn is_group(entry: &Value) -> bool {
    entry.get("repeat").is_some()
}

/// The group's name, settings and arms, or `None` after recording what is wrong.
fn read_group(
    entry: &Value,
    pointer: &str,
    ordinal: usize,
    issues: &mut Vec<Issue>,
) -> Option<Group> {
    let obj = entry.as_object()?;
    let before = issues.len();
    for key in obj.keys() {
        if !["name", "repeat", "phases"].contains(&key.as_str()) {
            issues.push(
                Issue::new(
                    format!("{pointer}/{key}"),
                    format!("a repeat group has no `{key}`"),
                )
                .at_key()
                .hint(Some(
                    "a group holds `repeat`, `phases` and an optional `name`; settings go in \
                         its phases (or `defaults`)"
                        .into(),
                )),
            );
        }
    }
    let name = match obj.get("name") {
        None => format!("repeat-{ordinal}"),
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(other) => {
            issues.push(Issue::new(
                format!("{pointer}/name"),
                format!("expected a group name, found {}", describe_value(other)),
            ));
            String::new()
        }
    };
    let spec = read_spec(&obj["repeat"], &format!("{pointer}/repeat"), issues);
    let arms = read_arms(obj.get("phases"), pointer, issues);
    let spec = spec?;
    (issues.len() == before).then_some(Group { name, spec, arms })
}

fn read_spec(value: &Value, pointer: &str, issues: &mut Vec<Issue>) -> Option<Spec> {
    let Some(obj) = value.as_object() else {
        issues.push(
            Issue::new(
                pointer,
                format!("expected a mapping, found {}", describe_value(value)),
            )
            .hint(Some("repeat: {times: 3, order: interleaved}".into())),
        );
        return None;
    };
    let before = issues.len();
    for key in obj.keys() {
        if !["times", "order", "seed"].contains(&key.as_str()) {
            issues.push(
                Issue::new(format!("{pointer}/{key}"), format!("unknown key `{key}`"))
                    .at_key()
                    .hint(Some("`repeat` takes `times`, `order` and `seed`".into())),
            );
        }
    }
    let times = match obj.get("times").and_then(Value::as_u64) {
        Some(n) if (1..=MAX_ROUNDS).contains(&n) => n as u32,
        found => {
            let what = found.map_or_else(
                || obj.get("times").map_or("nothing".into(), describe_value),
                |n| n.to_string(),
            );
            issues.push(Issue::new(
                format!("{pointer}/times"),
                format!("`times` must be a whole number from 1 to {MAX_ROUNDS}, found {what}"),
            ));
            0
        }
    };
    let order = match obj.get("order") {
        None => RepeatOrder::default(),
        Some(v) => match v.as_str().and_then(RepeatOrder::parse) {
            Some(order) => order,
            None => {
                issues.push(Issue::new(
                    format!("{pointer}/order"),
                    format!(
                        "`order` is one of `{}`, found {}",
                        RepeatOrder::NAMES.join("`, `"),
                        describe_value(v)
                    ),
                ));
                RepeatOrder::default()
            }
        },
    };
    let seed = match obj.get("seed") {
        None => 0,
        Some(v) => v.as_u64().unwrap_or_else(|| {
            issues.push(Issue::new(
                format!("{pointer}/seed"),
                format!("`seed` must be a whole number, found {}", describe_value(v)),
            ));
            0
        }),
    };
    (issues.len() == before).then_some(Spec { times, order, seed })
}

/// The group's phases: each a mapping with a `name`, no recheck, no nested group.
fn read_arms(
    value: Option<&Value>,
    pointer: &str,
    issues: &mut Vec<Issue>,
) -> Vec<Map<String, Value>> {
    let Some(Value::Array(list)) = value.filter(|v| v.as_array().is_some_and(|l| !l.is_empty()))
    else {
        issues.push(
            Issue::new(
                pointer,
                "a repeat group needs `phases`: a list of at least one phase",
            )
            .hint(Some("phases: [{name: a, …}, {name: b, …}]".into())),
        );
        return Vec::new();
    };
    let mut arms = Vec::new();
    for (j, arm) in list.iter().enumerate() {
        let at = format!("{pointer}/phases/{j}");
        let Some(obj) = arm.as_object() else {
            issues.push(Issue::new(
                at,
                format!("expected a phase, found {}", describe_value(arm)),
            ));
            continue;
        };
        let refused = [
            (
                "recheck",
                "a recheck cannot be repeated; recheck a round by its name instead",
            ),
            ("repeat", "repeat groups do not nest"),
            ("round", "`round` is set by the group"),
            ("include", "list the included phases in the group itself"),
        ];
        for (key, why) in refused {
            if obj.contains_key(key) {
                issues.push(Issue::new(format!("{at}/{key}"), why).at_key());
            }
        }
        if !obj.get("name").is_some_and(Value::is_string) {
            issues.push(
                Issue::new(
                    at,
                    "a phase in a repeat group needs a `name`: it names the arm",
                )
                .hint(Some(
                    "its rounds are named `NAME/round-1`, `NAME/round-2`, …".into(),
                )),
            );
        }
        arms.push(obj.clone());
    }
    arms
}

/// (round, arm index) pairs in the order they run; rounds are 1-based.
fn order(spec: &Spec, arms: usize) -> Vec<(u32, usize)> {
    let rounds = 1..=spec.times;
    match spec.order {
        RepeatOrder::Interleaved => rounds
            .flat_map(|r| (0..arms).map(move |a| (r, a)))
            .collect(),
        RepeatOrder::Blocked => (0..arms)
            .flat_map(|a| (1..=spec.times).map(move |r| (r, a)))
            .collect(),
        RepeatOrder::Shuffled => {
            let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
            rounds
                .flat_map(|r| {
                    let mut each: Vec<usize> = (0..arms).collect();
                    shuffle(&mut each, &mut rng);
                    each.into_iter().map(move |a| (r, a))
                })
                .collect()
        }
    }
}

/// Fisher–Yates with the portable ChaCha stream, so a seed gives the same order everywhere.
fn shuffle(items: &mut [usize], rng: &mut ChaCha8Rng) {
    use rand::Rng;
    for i in (1..items.len()).rev() {
        let j = rng.random_range(0..=i);
        items.swap(i, j);
    }
}

/// One round of an arm: its name suffixed (templates in it still render) and its round set.
fn round_phase(arm: &Map<String, Value>, group: &str, round: u32, of: u32) -> Value {
    let mut phase = arm.clone();
    let name = arm.get("name").and_then(Value::as_str).unwrap_or_default();
    phase.insert("name".into(), Value::from(format!("{name}/round-{round}")));
    phase.insert(
        "round".into(),
        json!({"group": group, "arm": name, "index": round, "of": of}),
    );
    Value::Object(phase)
}

/// The authoring schema's definition of a repeat group (editors only: groups are expanded
/// before a plan is validated).
pub fn schema_definition() -> Value {
    json!({
        "description": "Runs its phases (the arms) `times` rounds over, each round a phase \
            of its own named `ARM/round-N`; the report pools each arm's rounds and says \
            whether the arms differ by more than the rounds vary.",
        "type": "object",
        "properties": {
            "name": {"description": "Names the group in the report (default `repeat-1`, …).", "type": "string"},
            "repeat": {
                "description": "How many rounds, in which order.",
                "type": "object",
                "properties": {
                    "times": {"description": "Rounds.", "type": "integer", "minimum": 1, "maximum": MAX_ROUNDS},
                    "order": {
                        "description": "`interleaved` (A B, A B, …, the default), `blocked` \
                            (A A, B B) or `shuffled` (each round in a seeded order).",
                        "enum": RepeatOrder::NAMES,
                    },
                    "seed": {"description": "Seed of the `shuffled` order.", "type": "integer", "minimum": 0},
                },
                "required": ["times"],
                "additionalProperties": false,
            },
            "phases": {
                "description": "The arms: phases, each with a `name`.",
                "type": "array",
                "minItems": 1,
                "items": {"$ref": "#/$defs/Phase"},
            },
        },
        "required": ["repeat", "phases"],
        "additionalProperties": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(times: u32, order: RepeatOrder, seed: u64) -> Spec {
        Spec { times, order, seed }
    }

    #[test]
    fn orders() {
        let interleaved = order(&spec(2, RepeatOrder::Interleaved, 0), 3);
        assert_eq!(
            interleaved,
            [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)]
        );
        let blocked = order(&spec(2, RepeatOrder::Blocked, 0), 2);
        assert_eq!(blocked, [(1, 0), (2, 0), (1, 1), (2, 1)]);
        let shuffled = order(&spec(20, RepeatOrder::Shuffled, 7), 3);
        assert_eq!(
            shuffled,
            order(&spec(20, RepeatOrder::Shuffled, 7), 3),
            "seeded"
        );
        for r in 1..=20 {
            let mut arms: Vec<usize> = shuffled
                .iter()
                .filter(|(round, _)| *round == r)
                .map(|(_, a)| *a)
                .collect();
            arms.sort_unstable();
            assert_eq!(arms, [0, 1, 2], "round {r} runs every arm once");
        }
        let firsts: std::collections::HashSet<usize> =
            shuffled.chunks(3).map(|round| round[0].1).collect();
        assert!(firsts.len() > 1, "no arm always runs first: {shuffled:?}");
    }
}
