//! `--sweep KEY=A..B[:STEP]` or `--sweep KEY=V1,V2,...`: configurations varying one key.
//! Several sweeps multiply (the first varies slowest).

use super::ConfigSpec;
use crate::error::{LabError, LabResult};

/// One swept key and its values (as text, applied with [`ConfigSpec::set`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep {
    pub key: String,
    pub values: Vec<String>,
}

const MAX_POINTS: usize = 256;

/// The syntax of a sweep's values, for every refusal of them.
const SYNTAX: &str = "values are A..B, A..B:STEP or V1,V2,...: e.g. chain-size=4..16, \
                      chain-size=4..16:2, chain-size=4,8,16";

/// Parses `chain-size=4..16`, `chain-size=2..16:2` or `class-delta=8,16,32,64`.
pub fn parse_sweep(s: &str) -> LabResult<Sweep> {
    let bad = |m: &str| LabError::usage(format!("invalid --sweep '{s}': {m}; {SYNTAX}"));
    let (key, spec) = s.split_once('=').ok_or_else(|| bad("no KEY=VALUES"))?;
    let key = key.trim().replace('_', "-");
    let spec = spec.trim();
    let values: Vec<String> = if let Some((a, rest)) = spec.split_once("..") {
        let (b, step) = match rest.split_once(':') {
            Some((b, st)) => (b, st),
            None => (rest, "1"),
        };
        let num = |t: &str| {
            t.trim()
                .parse::<u64>()
                .map_err(|_| bad(&format!("'{}' is not a whole number", t.trim())))
        };
        let (a, b, step) = (num(a)?, num(b)?, num(step)?);
        if step == 0 || a > b {
            return Err(bad("the range must be ascending with a positive step"));
        }
        if (b - a) / step + 1 > MAX_POINTS as u64 {
            return Err(bad(&format!("more than {MAX_POINTS} points")));
        }
        (a..=b).step_by(step as usize).map(|v| v.to_string()).collect()
    } else {
        spec.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect()
    };
    if values.is_empty() {
        return Err(bad("no values"));
    }
    // Check the key and every value now, for a clear message.
    if key == "label" || key == "name" {
        return Err(bad("cannot sweep the label"));
    }
    let mut probe = ConfigSpec::default();
    for v in &values {
        probe.set(&key, v).map_err(|e| match e {
            LabError::Usage(m) if m.starts_with("unknown configuration key") => LabError::Usage(m),
            LabError::Usage(m) => bad(&m),
            other => other,
        })?;
    }
    Ok(Sweep { key, values })
}

/// The configurations of the sweeps' cartesian product applied to `base`, labelled
/// `key=value[,key=value]`.
pub fn expand(base: &ConfigSpec, sweeps: &[Sweep]) -> LabResult<Vec<ConfigSpec>> {
    if sweeps.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = vec![(base.clone(), Vec::<String>::new())];
    for sw in sweeps {
        let mut next = Vec::new();
        for (spec, parts) in &out {
            for v in &sw.values {
                let mut c = spec.clone();
                c.set(&sw.key, v)?;
                let mut p = parts.clone();
                p.push(format!("{}={v}", sw.key));
                next.push((c, p));
            }
        }
        if next.len() > MAX_POINTS {
            return Err(LabError::usage(format!(
                "the sweeps make more than {MAX_POINTS} configurations"
            )));
        }
        out = next;
    }
    out.into_iter()
        .map(|(mut c, parts)| {
            c.label = parts.join(",");
            c.validate()?;
            Ok(c)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_lists_and_products() {
        let s = parse_sweep("chain-size=4..16").unwrap();
        assert_eq!(s.values.len(), 13);
        let d = parse_sweep("class-delta=8,16,32,64").unwrap();
        assert_eq!(d.values, ["8", "16", "32", "64"]);
        assert_eq!(parse_sweep("chain-size=2..8:3").unwrap().values, ["2", "5", "8"]);
        let specs = expand(
            &ConfigSpec::default(),
            &[d, parse_sweep("chain-policy=classic,heuristic").unwrap()],
        )
        .unwrap();
        assert_eq!(specs.len(), 8);
        assert_eq!(specs[1].label, "class-delta=8,chain-policy=heuristic");
        for bad in [
            "chain-size",
            "chain-size=16..4",
            "colour=1,2",
            "chain-size=a..b",
            "chain-size=",
            "chain-size=1..1000:1",
        ] {
            assert!(parse_sweep(bad).is_err(), "{bad}");
        }
        let e = parse_sweep("chain-size=4-16").unwrap_err().to_string();
        assert!(
            e.contains("'4-16' is not a whole number") && e.contains("chain-size=4..16"),
            "{e}"
        );
        let e = parse_sweep("chain-size=a..b").unwrap_err().to_string();
        assert!(e.contains("4..16:2") && e.contains("4,8,16"), "{e}");
        let zero = parse_sweep("chain-size=0..3").unwrap();
        assert!(expand(&ConfigSpec::default(), &[zero]).is_err());
    }
}
