//! `matrix` sweeps: the axes of a phase's matrix, their combinations, and checks on the keys.

use serde_json::{Map, Value};

use super::template::Templater;
use crate::plan::diag::did_you_mean;
use crate::plan::schema::{Issue, describe_value};
use crate::plan::source::escape;

/// One matrix key and its values.
pub(super) type Axis = (String, Vec<Value>);

pub(super) fn matrix_combinations(
    m: &Value,
    pointer: &str,
    is_recheck: bool,
    issues: &mut Vec<Issue>,
) -> Option<Vec<Axis>> {
    let mpointer = format!("{pointer}/matrix");
    if is_recheck {
        issues.push(
            Issue::new(mpointer, "a recheck entry cannot have a matrix")
                .at_key()
                .hint(Some("recheck each expanded phase by its name".into())),
        );
        return None;
    }
    let Some(obj) = m.as_object() else {
        issues.push(Issue::new(
            mpointer,
            format!(
                "expected a mapping of NAME: [values], found {}",
                describe_value(m)
            ),
        ));
        return None;
    };
    if obj.is_empty() {
        issues.push(
            Issue::new(mpointer, "the matrix is empty")
                .hint(Some("remove `matrix:` or give it a key".into())),
        );
        return None;
    }
    let mut axes = Vec::new();
    let mut ok = true;
    for (k, v) in obj {
        let kp = format!("{mpointer}/{}", escape(k));
        match v.as_array() {
            Some(vals) if !vals.is_empty() => axes.push((k.clone(), vals.clone())),
            Some(_) => {
                ok = false;
                issues.push(Issue::new(
                    kp,
                    format!("matrix key `{k}` has no values, so the phase would vanish"),
                ));
            }
            None => {
                ok = false;
                issues.push(Issue::new(
                    kp,
                    format!("expected a list of values, found {}", describe_value(v)),
                ));
            }
        }
    }
    ok.then_some(axes)
}

/// One combination: (key, index in its list, value) per key, in matrix order.
pub(super) type Combo = Vec<(String, usize, Value)>;

/// Every combination, first key outermost; each entry is (key, index in its list, value).
pub(super) fn cartesian(axes: &[Axis]) -> Vec<Combo> {
    let mut combos: Vec<Combo> = vec![Vec::new()];
    for (key, values) in axes {
        let mut next = Vec::with_capacity(combos.len() * values.len());
        for combo in &combos {
            for (idx, v) in values.iter().enumerate() {
                let mut c = combo.clone();
                c.push((key.clone(), idx, v.clone()));
                next.push(c);
            }
        }
        combos = next;
    }
    combos
}

/// A matrix key must name a phase field or feed a template, and a field it sets must not be
/// set by the phase too.
pub(super) fn check_keys(
    combo: &Combo,
    body: &Map<String, Value>,
    phase_fields: &[String],
    templater: &Templater,
    pointer: &str,
    issues: &mut Vec<Issue>,
) {
    let used = templater.names_used(&Value::Object(body.clone()));
    for (k, _, _) in combo {
        let is_field = phase_fields.iter().any(|f| f == k);
        if !is_field && !used.contains(k) {
            // Most likely a misspelt phase field, which would otherwise vanish.
            let hint = did_you_mean(k, phase_fields.iter().map(String::as_str)).or_else(|| {
                Some(
                    "a matrix key sets the phase field of that name or feeds a `{{ }}` template"
                        .into(),
                )
            });
            issues.push(
                Issue::new(
                    format!("{pointer}/matrix/{}", escape(k)),
                    format!(
                        "matrix key `{k}` is not a phase field and no template in the phase uses it"
                    ),
                )
                .at_key()
                .hint(hint),
            );
        }
        if body.contains_key(k) && is_field {
            issues.push(
                Issue::new(
                    format!("{pointer}/{}", escape(k)),
                    format!("`{k}` is set both here and by this phase's matrix"),
                )
                .at_key()
                .hint(Some("remove one of them".into())),
            );
        }
    }
}
