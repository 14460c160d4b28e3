//! The simulator's settings file: YAML or JSON, checked before serving.

use std::path::Path;

use super::SimConfig;

/// Read a settings file: JSON when it ends in `.json`, YAML otherwise.
pub fn load_config(path: &Path) -> Result<SimConfig, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| format!("{}: cannot read: {err}", path.display()))?;
    let is_json = path
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
    let config: SimConfig = if is_json {
        serde_json::from_str(&text).map_err(|err| format!("{}: {err}", path.display()))?
    } else {
        serde_saphyr::from_str(&text).map_err(|err| format!("{}: {err}", path.display()))?
    };
    config
        .validate()
        .map_err(|err| format!("{}: {err}", path.display()))?;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_json_and_yaml_and_names_the_file_on_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let json = dir.path().join("sim.json");
        std::fs::write(
            &json,
            r#"{"max_running": 3, "dialect": {"usage": "finish_chunk"}}"#,
        )
        .expect("write");
        let config = load_config(&json).expect("valid JSON");
        assert_eq!(config.max_running, Some(3));
        let yaml = dir.path().join("sim.yaml");
        std::fs::write(&yaml, "prefix_cache:\n  capacity_tokens: 1024\n").expect("write");
        let config = load_config(&yaml).expect("valid YAML");
        assert_eq!(config.prefix_cache.map(|c| c.capacity_tokens), Some(1024));
        let bad = dir.path().join("bad.yaml");
        std::fs::write(&bad, "jitter: 2\n").expect("write");
        let err = load_config(&bad).expect_err("invalid");
        assert!(err.contains("bad.yaml") && err.contains("jitter"), "{err}");
        let unknown = dir.path().join("unknown.yaml");
        std::fs::write(&unknown, "max_runing: 2\n").expect("write");
        let err = load_config(&unknown).expect_err("unknown field");
        assert!(err.contains("max_runing"), "{err}");
    }
}
