//! Static checks of the CEL expressions of `@routeGated` and `@validates`: syntax, nesting
//! depth, which variables they read (scope), and which field paths they read from the bound
//! variable.
//!
//! Parsing runs on a thread of its own with a large stack, and expressions nested deeper than
//! [`MAX_CEL_DEPTH`] are refused before the parser sees them, so no expression can exhaust the
//! stack of the compiler (the derive) or of the host.

use cel::common::ast::{EntryExpr, Expr};
use cel::parser::{Expression, Parser};

use super::kind::{scope_variable, TagErrorKind};
use super::tag::Tag;
use super::text::first_line;

/// The deepest nesting an expression may have: brackets in the source, and levels of the
/// parsed expression tree counted in `ast_depth` units.
pub const MAX_CEL_DEPTH: usize = 32;

/// The AST depth allowed: an operator chain such as `a && b && c` nests one level per operand,
/// so this is more generous than [`MAX_CEL_DEPTH`].
pub const MAX_AST_DEPTH: usize = 4 * MAX_CEL_DEPTH;

/// The stack of the parsing thread.
const PARSE_STACK: usize = 64 * 1024 * 1024;

/// Identifiers every expression may read besides its variable: CEL's type names.
pub(crate) const TYPE_NAMES: [&str; 10] = [
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
];

/// What a well-formed, not too deep expression reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CelReads {
    /// Identifiers read that are neither bound by a macro (`exists(t, …)`) nor CEL type
    /// names, in first-read order, without repetition.
    pub free: Vec<String>,
    /// Field paths read from each free identifier: `state.todos.length` gives
    /// `("state", ["todos", "length"])`. Only plain `.field` chains are listed; a chain stops
    /// at an index or a call.
    pub paths: Vec<(String, Vec<String>)>,
    /// The depth of the parsed expression tree (a lone literal is 1).
    pub depth: usize,
}

/// Why an expression cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CelProblem {
    /// Not valid CEL: the first line of the parser's message (the empty expression included).
    Syntax(String),
    /// Nested deeper than [`MAX_CEL_DEPTH`].
    TooDeep,
}

/// Parses `source` (on a big-stack thread) and lists what it reads.
pub fn analyze(source: &str) -> Result<CelReads, CelProblem> {
    if source.trim().is_empty() {
        return Err(CelProblem::Syntax(
            "ERROR: <input>:1:1: Syntax error: the expression is empty".to_owned(),
        ));
    }
    if bracket_depth(source) > MAX_CEL_DEPTH {
        return Err(CelProblem::TooDeep);
    }
    let owned = source.to_owned();
    let worker = std::thread::Builder::new()
        .name("cel-check".into())
        .stack_size(PARSE_STACK)
        .spawn(move || analyze_here(&owned));
    match worker.map(|handle| handle.join()) {
        Ok(Ok(result)) => result,
        _ => Err(CelProblem::Syntax(
            "ERROR: <input>: the CEL parser failed on this expression".to_owned(),
        )),
    }
}

/// The error of `tag`'s expression `source`, if any: E6/E7 (syntax), E21 (depth) or E20
/// (a variable other than `state` for `@routeGated` / `v` for `@validates`).
pub fn check_expression(tag: Tag, source: &str) -> Option<TagErrorKind> {
    match analyze(source) {
        Err(CelProblem::Syntax(parser_message)) => Some(TagErrorKind::InvalidCel {
            tag,
            parser_message,
        }),
        Err(CelProblem::TooDeep) => Some(TagErrorKind::CelTooDeep {
            tag,
            max: MAX_CEL_DEPTH,
        }),
        Ok(reads) => {
            let allowed = scope_variable(tag);
            reads
                .free
                .into_iter()
                .find(|ident| ident != allowed)
                .map(|ident| TagErrorKind::CelScope { tag, ident })
        }
    }
}

/// Evaluates `source` with `var` bound to `value` (on a big-stack thread); true only when
/// the result is the boolean `true`. For start-up checks; the runtime has its own cached
/// evaluator.
pub fn evaluate(source: &str, var: &str, value: &serde_json::Value) -> bool {
    if analyze(source).is_err() {
        return false;
    }
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("cel-evaluate".into())
            .stack_size(PARSE_STACK)
            .spawn_scoped(scope, || {
                let env = std::sync::Arc::new(cel::Env::stdlib());
                let Ok(program) = env.compile(source) else {
                    return false;
                };
                let Ok(bound) = cel::to_value(value) else {
                    return false;
                };
                let mut context = cel::Context::with_env(env);
                context.add_variable_from_value(var, bound);
                matches!(program.execute(&context), Ok(cel::Value::Bool(true)))
            })
            .ok()
            .and_then(|handle| handle.join().ok())
            .unwrap_or(false)
    })
}

/// Runs `f` on the parsed expression of `source`, on a thread with a big stack (so `f` may
/// recurse over the tree, whose depth is at most [`MAX_AST_DEPTH`]); the same refusals as
/// [`analyze`] (empty, syntax, too deep). A panic in the parser or in `f` is a syntax problem.
pub(crate) fn with_parsed<R: Send>(
    source: &str,
    f: impl FnOnce(&Expression) -> R + Send,
) -> Result<R, CelProblem> {
    if source.trim().is_empty() {
        return Err(CelProblem::Syntax(
            "ERROR: <input>:1:1: Syntax error: the expression is empty".to_owned(),
        ));
    }
    if bracket_depth(source) > MAX_CEL_DEPTH {
        return Err(CelProblem::TooDeep);
    }
    let failed = || {
        CelProblem::Syntax("ERROR: <input>: the CEL parser failed on this expression".to_owned())
    };
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("cel-typecheck".into())
            .stack_size(PARSE_STACK)
            .spawn_scoped(scope, || {
                let parsed = Parser::new()
                    .parse(source)
                    .map_err(|e| CelProblem::Syntax(first_line(&e.to_string()).to_owned()))?;
                if ast_depth(&parsed) > MAX_AST_DEPTH {
                    return Err(CelProblem::TooDeep);
                }
                Ok(f(&parsed))
            })
            .map_err(|_| failed())?
            .join()
            .unwrap_or_else(|_| Err(failed()))
    })
}

/// [`analyze`] on the current thread.
fn analyze_here(source: &str) -> Result<CelReads, CelProblem> {
    let parsed = Parser::new()
        .parse(source)
        .map_err(|e| CelProblem::Syntax(first_line(&e.to_string()).to_owned()))?;
    let depth = ast_depth(&parsed);
    if depth > MAX_AST_DEPTH {
        return Err(CelProblem::TooDeep);
    }
    let mut reads = CelReads {
        depth,
        ..CelReads::default()
    };
    walk(&parsed, &mut Vec::new(), &mut reads);
    Ok(reads)
}

/// The deepest nesting of `(`, `[` and `{` outside string literals.
fn bracket_depth(source: &str) -> usize {
    let mut depth = 0usize;
    let mut max = 0;
    let mut quote: Option<char> = None;
    let mut chars = source.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(_), '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '(' | '[' | '{') => {
                depth += 1;
                max = max.max(depth);
            }
            (None, ')' | ']' | '}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// The children of an expression node (every expression it holds), for walks over a parsed
/// CEL expression.
pub fn children(expr: &Expression) -> Vec<&Expression> {
    match &expr.expr {
        Expr::Call(call) => call.target.iter().map(|t| &**t).chain(&call.args).collect(),
        Expr::Comprehension(c) => vec![
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ],
        Expr::List(list) => list.elements.iter().collect(),
        Expr::Map(map) => map.entries.iter().flat_map(entry_children).collect(),
        Expr::Struct(s) => s.entries.iter().flat_map(entry_children).collect(),
        Expr::Select(select) => vec![&*select.operand],
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => Vec::new(),
    }
}

/// The expressions of a map or struct entry.
fn entry_children(entry: &cel::common::ast::IdedEntryExpr) -> Vec<&Expression> {
    match &entry.expr {
        EntryExpr::StructField(field) => vec![&field.value],
        EntryExpr::MapEntry(map) => vec![&map.key, &map.value],
    }
}

/// The depth of the tree (a leaf is 1), computed without recursion.
fn ast_depth(root: &Expression) -> usize {
    let mut max = 0;
    let mut stack = vec![(root, 1usize)];
    while let Some((node, depth)) = stack.pop() {
        max = max.max(depth);
        if depth > MAX_AST_DEPTH {
            break;
        }
        stack.extend(children(node).into_iter().map(|c| (c, depth + 1)));
    }
    max
}

/// Collects free identifiers and `.field` paths; `bound` holds the macro variables in scope.
/// The tree depth is bounded by [`MAX_AST_DEPTH`] before this runs.
fn walk(expr: &Expression, bound: &mut Vec<String>, reads: &mut CelReads) {
    if let Some((root, path)) = select_chain(expr) {
        if !is_bound(root, bound) {
            note_free(root, reads);
            if !path.is_empty() {
                let entry = (root.to_owned(), path);
                if !reads.paths.contains(&entry) {
                    reads.paths.push(entry);
                }
            }
        }
        return;
    }
    match &expr.expr {
        Expr::Comprehension(c) => {
            walk(&c.iter_range, bound, reads);
            walk(&c.accu_init, bound, reads);
            let before = bound.len();
            bound.push(c.iter_var.clone());
            bound.extend(c.iter_var2.clone());
            bound.push(c.accu_var.clone());
            walk(&c.loop_cond, bound, reads);
            walk(&c.loop_step, bound, reads);
            walk(&c.result, bound, reads);
            bound.truncate(before);
        }
        _ => {
            for child in children(expr) {
                walk(child, bound, reads);
            }
        }
    }
}

/// `ident.a.b` as `("ident", ["a", "b"])` (a bare identifier has an empty path); `None` for
/// anything but plain selects on an identifier.
pub fn select_chain(expr: &Expression) -> Option<(&str, Vec<String>)> {
    let mut fields = Vec::new();
    let mut node = expr;
    loop {
        match &node.expr {
            Expr::Ident(name) => {
                fields.reverse();
                return Some((name.as_str(), fields));
            }
            Expr::Select(select) => {
                fields.push(select.field.clone());
                node = &select.operand;
            }
            _ => return None,
        }
    }
}

/// True for macro variables in scope, the macros' hidden accumulator and CEL type names.
fn is_bound(ident: &str, bound: &[String]) -> bool {
    ident.starts_with('@') || bound.iter().any(|b| b == ident) || TYPE_NAMES.contains(&ident)
}

/// Adds `ident` to the free identifiers once.
fn note_free(ident: &str, reads: &mut CelReads) {
    if !reads.free.iter().any(|f| f == ident) {
        reads.free.push(ident.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(source: &str) -> CelReads {
        analyze(source).unwrap()
    }

    #[test]
    fn free_identifiers_and_paths() {
        let r = reads("state.todos.size() > 0 && state.mode == 'edit'");
        assert_eq!(r.free, ["state"]);
        assert_eq!(
            r.paths,
            [
                ("state".to_owned(), vec!["todos".to_owned()]),
                ("state".to_owned(), vec!["mode".to_owned()])
            ]
        );
        let r = reads("state.items.exists(t, t.done) && size(v) > 0");
        assert_eq!(r.free, ["state", "v"]);
        assert_eq!(reads("has(state.a.b)").paths[0].1, ["a", "b"]);
        assert_eq!(reads("type(v) == string").free, ["v"]);
        assert!(reads("[1, 2].all(x, x > 0)").free.is_empty());
    }

    #[test]
    fn scope_errors() {
        assert_eq!(check_expression(Tag::Validates, "v >= 0"), None);
        assert_eq!(check_expression(Tag::RouteGated, "state.ready"), None);
        assert_eq!(
            check_expression(Tag::Validates, "v < state.max"),
            Some(TagErrorKind::CelScope {
                tag: Tag::Validates,
                ident: "state".into()
            })
        );
        assert_eq!(
            check_expression(Tag::RouteGated, "v == 1")
                .unwrap()
                .to_string(),
            "`@routeGated` reads `v`, but only `state` is in scope\nhelp: `@routeGated` sees \
             only `state`; a check on a field belongs in `@validates` on that field"
        );
        assert_eq!(
            check_expression(Tag::RouteGated, "todos.size() > 0")
                .unwrap()
                .summary(),
            "`@routeGated` reads `todos`, but only `state` is in scope"
        );
        assert!(matches!(
            check_expression(Tag::RouteGated, "state."),
            Some(TagErrorKind::InvalidCel { .. })
        ));
    }

    #[test]
    fn deep_expressions_are_refused_not_crashed() {
        let deep = format!("{}v{}", "(".repeat(200), ")".repeat(200));
        assert_eq!(analyze(&deep), Err(CelProblem::TooDeep));
        let ok = format!("{}v{} > 0", "(".repeat(20), ")".repeat(20));
        assert!(analyze(&ok).is_ok());
        // A quoted bracket does not count.
        assert!(analyze(&format!("v == '{}'", "(".repeat(100))).is_ok());
        // Logical chains are balanced by the parser; arithmetic chains nest one level per term.
        assert!(analyze(&vec!["v > 0"; 300].join(" && ")).is_ok());
        assert_eq!(
            analyze(&format!("{} > 0", vec!["v"; 300].join(" + "))),
            Err(CelProblem::TooDeep)
        );
        assert!(analyze(&format!("{} > 0", vec!["v"; 20].join(" + "))).is_ok());
    }
}
