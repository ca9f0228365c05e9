//! serde's `rename_all` case conventions, applied exactly as serde applies them.

/// One `rename_all` convention (or none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum RenameRule {
    /// No rule: the identifier as written (without `r#`).
    #[default]
    None,
    /// `"lowercase"`
    LowerCase,
    /// `"UPPERCASE"`
    UpperCase,
    /// `"PascalCase"`
    PascalCase,
    /// `"camelCase"`
    CamelCase,
    /// `"snake_case"`
    SnakeCase,
    /// `"SCREAMING_SNAKE_CASE"`
    ScreamingSnakeCase,
    /// `"kebab-case"`
    KebabCase,
    /// `"SCREAMING-KEBAB-CASE"`
    ScreamingKebabCase,
}

use RenameRule::*;

impl RenameRule {
    /// The rule serde accepts under this name.
    pub(crate) fn from_name(name: &str) -> Option<RenameRule> {
        Some(match name {
            "lowercase" => LowerCase,
            "UPPERCASE" => UpperCase,
            "PascalCase" => PascalCase,
            "camelCase" => CamelCase,
            "snake_case" => SnakeCase,
            "SCREAMING_SNAKE_CASE" => ScreamingSnakeCase,
            "kebab-case" => KebabCase,
            "SCREAMING-KEBAB-CASE" => ScreamingKebabCase,
            _ => return Option::None,
        })
    }

    /// This rule, or `other` when this one is [`RenameRule::None`].
    pub(crate) fn or(self, other: RenameRule) -> RenameRule {
        if self == None {
            other
        } else {
            self
        }
    }

    /// Applies the rule to a variant identifier (written in PascalCase).
    pub(crate) fn apply_to_variant(self, variant: &str) -> String {
        match self {
            None | PascalCase => variant.to_owned(),
            LowerCase => variant.to_ascii_lowercase(),
            UpperCase => variant.to_ascii_uppercase(),
            CamelCase => lower_first(variant),
            SnakeCase => {
                let mut snake = String::new();
                for (i, ch) in variant.char_indices() {
                    if i > 0 && ch.is_uppercase() {
                        snake.push('_');
                    }
                    snake.push(ch.to_ascii_lowercase());
                }
                snake
            }
            ScreamingSnakeCase => SnakeCase.apply_to_variant(variant).to_ascii_uppercase(),
            KebabCase => SnakeCase.apply_to_variant(variant).replace('_', "-"),
            ScreamingKebabCase => ScreamingSnakeCase
                .apply_to_variant(variant)
                .replace('_', "-"),
        }
    }

    /// Applies the rule to a field identifier (written in snake_case).
    pub(crate) fn apply_to_field(self, field: &str) -> String {
        match self {
            None | LowerCase | SnakeCase => field.to_owned(),
            UpperCase | ScreamingSnakeCase => field.to_ascii_uppercase(),
            PascalCase => {
                let mut pascal = String::new();
                let mut capitalize = true;
                for ch in field.chars() {
                    if ch == '_' {
                        capitalize = true;
                    } else if capitalize {
                        pascal.push(ch.to_ascii_uppercase());
                        capitalize = false;
                    } else {
                        pascal.push(ch);
                    }
                }
                pascal
            }
            CamelCase => lower_first(&PascalCase.apply_to_field(field)),
            KebabCase => field.replace('_', "-"),
            ScreamingKebabCase => field.to_ascii_uppercase().replace('_', "-"),
        }
    }
}

/// `text` with its first char ASCII-lowercased.
fn lower_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
        Option::None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::RenameRule::{self, *};

    const ALL: [(RenameRule, &str, &str); 9] = [
        // (rule, variant "VeryTasty", field "very_tasty")
        (None, "VeryTasty", "very_tasty"),
        (LowerCase, "verytasty", "very_tasty"),
        (UpperCase, "VERYTASTY", "VERY_TASTY"),
        (PascalCase, "VeryTasty", "VeryTasty"),
        (CamelCase, "veryTasty", "veryTasty"),
        (SnakeCase, "very_tasty", "very_tasty"),
        (ScreamingSnakeCase, "VERY_TASTY", "VERY_TASTY"),
        (KebabCase, "very-tasty", "very-tasty"),
        (ScreamingKebabCase, "VERY-TASTY", "VERY-TASTY"),
    ];

    #[test]
    fn conventions_match_serde() {
        for (rule, variant, field) in ALL {
            assert_eq!(rule.apply_to_variant("VeryTasty"), variant, "{rule:?}");
            assert_eq!(rule.apply_to_field("very_tasty"), field, "{rule:?}");
        }
        assert_eq!(SnakeCase.apply_to_variant("A"), "a");
        assert_eq!(SnakeCase.apply_to_variant("HTTPServer"), "h_t_t_p_server");
        assert_eq!(CamelCase.apply_to_variant("A"), "a");
        assert_eq!(CamelCase.apply_to_field("_leading"), "leading");
        assert_eq!(PascalCase.apply_to_field("a__b"), "AB");
        assert_eq!(KebabCase.apply_to_variant("SetCount2"), "set-count2");
    }

    #[test]
    fn names() {
        for (rule, name) in [
            (LowerCase, "lowercase"),
            (UpperCase, "UPPERCASE"),
            (PascalCase, "PascalCase"),
            (CamelCase, "camelCase"),
            (SnakeCase, "snake_case"),
            (ScreamingSnakeCase, "SCREAMING_SNAKE_CASE"),
            (KebabCase, "kebab-case"),
            (ScreamingKebabCase, "SCREAMING-KEBAB-CASE"),
        ] {
            assert_eq!(RenameRule::from_name(name), Some(rule));
        }
        assert_eq!(RenameRule::from_name("Camel"), Option::None);
        assert_eq!(None.or(CamelCase), CamelCase);
        assert_eq!(SnakeCase.or(CamelCase), SnakeCase);
    }
}
