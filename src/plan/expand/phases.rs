//! The phases pass: each raw phase becomes one concrete phase per matrix combination, its
//! templates rendered and the plan's `defaults` filled in.

use serde_json::{Map, Value};

use super::PhaseOrigin;
use super::matrix::{Combo, cartesian, check_keys, matrix_combinations};
use super::template::Templater;
use crate::plan::schema::Issue;
use crate::plan::source::escape;

/// What every phase is expanded with.
pub(super) struct PhasePass<'a> {
    pub templater: &'a Templater,
    /// Template context: the plan's variables.
    pub ctx: &'a Map<String, Value>,
    /// The rendered `defaults` mapping.
    pub defaults: &'a Map<String, Value>,
    pub phase_fields: Vec<String>,
    pub max_phases: usize,
}

/// The combinations of one raw phase, or why there are none.
enum Combinations {
    Each(Vec<Combo>),
    /// The matrix is invalid: skip this phase, go on with the next.
    Skip,
    /// The plan is past the phase limit: stop expanding.
    Stop,
}

impl PhasePass<'_> {
    /// Every concrete phase, in plan order, with where each came from.
    pub(super) fn expand(
        &self,
        raw_phases: &[Value],
        issues: &mut Vec<Issue>,
    ) -> (Vec<Value>, Vec<PhaseOrigin>) {
        let mut phases: Vec<Value> = Vec::new();
        let mut origins: Vec<PhaseOrigin> = Vec::new();
        let mut total: usize = 0;
        for (i, raw_phase) in raw_phases.iter().enumerate() {
            let pointer = format!("/phases/{i}");
            let Some(obj) = raw_phase.as_object() else {
                continue;
            };
            let is_recheck = obj.contains_key("recheck");
            let mut body = obj.clone();
            let matrix_raw = body.remove("matrix");
            let combos =
                match self.combinations(matrix_raw.as_ref(), &pointer, is_recheck, total, issues) {
                    Combinations::Each(combos) => combos,
                    Combinations::Skip => continue,
                    Combinations::Stop => break,
                };
            total += combos.len();
            if let Some(first) = combos.first() {
                let fields = &self.phase_fields;
                check_keys(first, &body, fields, self.templater, &pointer, issues);
            }
            let before = issues.len();
            for combo in combos {
                let (phase, origin) =
                    self.instantiate(i, &pointer, &body, is_recheck, &combo, issues);
                phases.push(phase);
                origins.push(origin);
            }
            super::dedup_from(issues, before);
        }
        (phases, origins)
    }

    /// The matrix combinations of one phase (one empty one without a matrix), within the
    /// plan's phase limit given the `total` phases so far.
    fn combinations(
        &self,
        matrix: Option<&Value>,
        pointer: &str,
        is_recheck: bool,
        total: usize,
        issues: &mut Vec<Issue>,
    ) -> Combinations {
        let max_phases = self.max_phases;
        let Some(m) = matrix else {
            if total + 1 > max_phases {
                issues.push(
                    Issue::new(
                        pointer.to_string(),
                        format!("the plan has more than {max_phases} phases"),
                    )
                    .hint(Some("raise the limit with --max-phases".into())),
                );
                return Combinations::Stop;
            }
            return Combinations::Each(vec![Vec::new()]);
        };
        let m = self
            .templater
            .render(m, self.ctx, &format!("{pointer}/matrix"), issues);
        let Some(axes) = matrix_combinations(&m, pointer, is_recheck, issues) else {
            return Combinations::Skip;
        };
        let count = axes
            .iter()
            .try_fold(1usize, |acc, (_, vals)| acc.checked_mul(vals.len()));
        match count.and_then(|c| total.checked_add(c)) {
            Some(t) if t <= max_phases => Combinations::Each(cartesian(&axes)),
            _ => {
                let n = count.map_or("too many".to_string(), |c| c.to_string());
                issues.push(
                    Issue::new(
                        format!("{pointer}/matrix"),
                        format!(
                            "this matrix expands to {n} phases, which takes the plan past the limit of {max_phases} phases"
                        ),
                    )
                    .at_key()
                    .hint(Some("shrink the matrix, or raise the limit with --max-phases".into())),
                );
                Combinations::Stop
            }
        }
    }

    /// One concrete phase: the body rendered with the combination's values, matrix keys that
    /// name phase fields set, then defaults for whatever is still unset.
    fn instantiate(
        &self,
        raw_index: usize,
        pointer: &str,
        body: &Map<String, Value>,
        is_recheck: bool,
        combo: &Combo,
        issues: &mut Vec<Issue>,
    ) -> (Value, PhaseOrigin) {
        let mut local = self.ctx.clone();
        let mut origin = PhaseOrigin {
            raw_index,
            ..PhaseOrigin::default()
        };
        for (k, _, v) in combo {
            local.insert(k.clone(), v.clone());
            origin.matrix.push((k.clone(), v.clone()));
        }
        let rendered = self
            .templater
            .render(&Value::Object(body.clone()), &local, pointer, issues);
        let mut phase = rendered.as_object().cloned().unwrap_or_default();
        for (k, idx, v) in combo {
            if self.phase_fields.iter().any(|f| f == k) && !phase.contains_key(k) {
                phase.insert(k.clone(), v.clone());
                origin
                    .sources
                    .insert(k.clone(), format!("{pointer}/matrix/{}/{idx}", escape(k)));
            }
        }
        for (k, v) in self.defaults {
            // `tolerance` is a recheck setting; every other default is a measured phase's.
            let applies = if k == "tolerance" {
                is_recheck
            } else {
                !is_recheck
            };
            // A phase's `mix` takes the place of the default workload.
            let replaced = k == "workload" && phase.contains_key("mix");
            if applies && !replaced && !phase.contains_key(k) {
                phase.insert(k.clone(), v.clone());
                origin
                    .sources
                    .insert(k.clone(), format!("/defaults/{}", escape(k)));
            }
        }
        (Value::Object(phase), origin)
    }
}
