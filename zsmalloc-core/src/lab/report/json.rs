//! JSON: a run is one object with the §8 field names; a comparison holds the workload, the
//! reference label and the runs, each with `deltas_pct` against the first.

use serde_json::{json, Value};

use crate::lab::compare::Comparison;
use crate::lab::error::{LabError, LabResult};
use crate::lab::result::{delta_value, RunResult};

fn to_value<T: serde::Serialize>(v: &T) -> LabResult<Value> {
    serde_json::to_value(v).map_err(|e| LabError::runtime(format!("json: {e}")))
}

fn pretty(v: &Value) -> LabResult<String> {
    serde_json::to_string_pretty(v)
        .map(|s| s + "\n")
        .map_err(|e| LabError::runtime(format!("json: {e}")))
}

pub fn run(r: &RunResult) -> LabResult<String> {
    pretty(&to_value(r)?)
}

pub fn comparison(c: &Comparison) -> LabResult<String> {
    let base = c.runs.first();
    let mut runs = Vec::new();
    for r in &c.runs {
        let mut v = to_value(r)?;
        if let (Some(b), Value::Object(m)) = (base, &mut v) {
            let deltas: serde_json::Map<String, Value> = r
                .deltas(b)
                .into_iter()
                .map(|(k, t)| (k.to_string(), json!(delta_value(t))))
                .collect();
            m.insert("deltas_pct".into(), Value::Object(deltas));
        }
        runs.push(v);
    }
    pretty(&json!({
        "workload": to_value(&c.workload)?,
        "base": base.map(|b| b.label.clone()),
        "sweep": c.sweep_keys,
        "runs": runs,
    }))
}
