//! Tool calls: the functions a workload offers by default, and a call as an assistant made it.

use serde::{Deserialize, Serialize};

/// The tools a workload offers when it names none: three functions a coding or research agent
/// commonly has.
pub fn builtin_tools() -> Vec<serde_json::Value> {
    let function = |name: &str, description: &str, param: &str, about: &str| {
        serde_json::json!({
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "properties": {param: {"type": "string", "description": about}},
                    "required": [param],
                },
            },
        })
    };
    vec![
        function(
            "search",
            "Search the web and return the top results.",
            "query",
            "What to search for.",
        ),
        function(
            "read_file",
            "Read a file from the workspace.",
            "path",
            "The file's path.",
        ),
        function(
            "run_command",
            "Run a shell command and return its output.",
            "command",
            "The command line.",
        ),
    ]
}

/// A function call an assistant message made, as the server streamed it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments' JSON text, as the server wrote it.
    pub arguments: String,
}

impl Serialize for ToolCall {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serde_json::json!({
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        })
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for ToolCall {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Function {
            #[serde(default)]
            name: String,
            #[serde(default)]
            arguments: String,
        }
        #[derive(Deserialize)]
        struct Wire {
            #[serde(default)]
            id: String,
            function: Function,
        }
        let wire = Wire::deserialize(d)?;
        Ok(ToolCall {
            id: wire.id,
            name: wire.function.name,
            arguments: wire.function.arguments,
        })
    }
}
