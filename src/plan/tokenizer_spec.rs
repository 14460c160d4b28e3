//! `tokenizer:` in plans: the mapping form and its one-string shorthands.
//!
//! `tokenizer: server` stands for `{source: server}` (likewise `simulator`, `builtin`), and
//! `tokenizer: path/to/tokenizer.json` for `{source: file, path: path/to/tokenizer.json}`.
//! A bare word that is not a source name is refused rather than read as a file name, so a
//! typo such as `sever` gets a "did you mean" instead of "cannot read sever".

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::model::{TokenizerSource, TokenizerSpec};

/// Source names that need no other setting, as written in a plan.
const KEYWORDS: [(&str, TokenizerSource); 3] = [
    ("simulator", TokenizerSource::Simulator),
    ("builtin", TokenizerSource::Builtin),
    ("server", TokenizerSource::Server),
];

/// What a shorthand path looks like: a `.json` file, or anything with a directory in it.
const PATH_PATTERN: &str = r"/|\.json$";

const EXPECTING: &str = "a tokenizer: `server`, `simulator`, `builtin`, the path of a \
    tokenizer.json, or a mapping such as {source: file, path: tokenizer.json}";

/// The mapping form of `tokenizer:`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TokenizerMapping {
    /// Where token counts come from: `simulator`, `builtin`, `file` or `server`.
    source: TokenizerSource,
    /// `tokenizer.json` path for `source: file`, relative to the plan file.
    #[serde(default)]
    path: Option<String>,
    /// Chat template (Jinja) path for `source: file`, relative to the plan file.
    #[serde(default)]
    chat_template: Option<String>,
}

impl TokenizerSpec {
    /// The spec a one-string form stands for.
    pub fn from_shorthand(text: &str) -> Result<TokenizerSpec, String> {
        let text = text.trim();
        let spec = |source, path: Option<&str>| TokenizerSpec {
            source,
            path: path.map(str::to_string),
            chat_template: None,
        };
        if let Some((_, source)) = KEYWORDS.iter().find(|(k, _)| *k == text) {
            return Ok(spec(*source, None));
        }
        if text == "file" {
            return Err(
                "`file` needs a path: write the path of the tokenizer.json itself, \
                 e.g. `tokenizer: tokenizer.json`"
                    .into(),
            );
        }
        if text.ends_with(".json") || text.contains('/') {
            return Ok(spec(TokenizerSource::File, Some(text)));
        }
        Err(format!(
            "expected `simulator`, `builtin`, `server` or the path of a tokenizer.json, \
             found {text:?}"
        ))
    }
}

impl From<TokenizerMapping> for TokenizerSpec {
    fn from(m: TokenizerMapping) -> Self {
        TokenizerSpec {
            source: m.source,
            path: m.path,
            chat_template: m.chat_template,
        }
    }
}

impl<'de> Deserialize<'de> for TokenizerSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SpecVisitor;
        impl<'de> Visitor<'de> for SpecVisitor {
            type Value = TokenizerSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(EXPECTING)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<TokenizerSpec, E> {
                TokenizerSpec::from_shorthand(v).map_err(E::custom)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<TokenizerSpec, A::Error> {
                TokenizerMapping::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(TokenizerSpec::from)
            }
        }
        deserializer.deserialize_any(SpecVisitor)
    }
}

impl JsonSchema for TokenizerSpec {
    fn schema_name() -> Cow<'static, str> {
        "TokenizerSpec".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mapping = generator.subschema_for::<TokenizerMapping>();
        let names: Vec<&str> = KEYWORDS.iter().map(|(k, _)| *k).collect();
        json_schema!({
            "description": "How prompt text is counted in tokens: `server`, `simulator`, \
                `builtin`, the path of a `tokenizer.json`, or a mapping with `source`.",
            "anyOf": [
                {
                    "description": "A source that needs no other setting.",
                    "type": "string",
                    "enum": names,
                },
                {
                    "description": "The path of a Hugging Face `tokenizer.json`, relative to \
                        the plan file (`source: file`).",
                    "type": "string",
                    "pattern": PATH_PATTERN,
                },
                mapping,
            ],
            "examples": [
                "server",
                "tokenizers/llama-3.json",
                {"source": "file", "path": "tokenizer.json", "chat_template": "chat.jinja"},
            ],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: serde_json::Value) -> Result<TokenizerSpec, String> {
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    #[test]
    fn shorthands_stand_for_their_mappings() {
        assert_eq!(
            read(json!("server")).unwrap(),
            read(json!({"source": "server"})).unwrap()
        );
        let file = read(json!("tok/tokenizer.json")).unwrap();
        assert_eq!(file.source, TokenizerSource::File);
        assert_eq!(file.path.as_deref(), Some("tok/tokenizer.json"));
        let mapping = read(json!({"source": "file", "path": "a.json", "chat_template": "c.j"}));
        assert_eq!(mapping.unwrap().chat_template.as_deref(), Some("c.j"));
    }

    #[test]
    fn wrong_shapes_say_what_is_accepted() {
        let err = read(json!(42)).unwrap_err();
        assert!(err.contains("`server`, `simulator`, `builtin`"), "{err}");
        let err = read(json!("sever")).unwrap_err();
        assert!(err.contains("found \"sever\""), "{err}");
        let err = read(json!("file")).unwrap_err();
        assert!(err.contains("needs a path"), "{err}");
        assert!(read(json!({"source": "server", "pth": "x"})).is_err());
    }
}
