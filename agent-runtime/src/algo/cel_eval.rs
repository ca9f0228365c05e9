//! CEL predicates: `@routeGated` gates and `@validates` checks (semantics §3).
//!
//! - Bindings: `state` (the redacted state) for route gates, `v` (the field's JSON value) for
//!   `@validates`.
//! - JSON → CEL: null → null, bool → bool, string → string, an integer that fits `i64` → int,
//!   a larger non-negative integer → uint, any other number → double, array → list, object →
//!   map with string keys.
//! - **Fail-closed**: a predicate passes only when it evaluates to the boolean `true`. `false`,
//!   a non-boolean result, an evaluation error and a program that does not compile all fail.
//! - Programs are compiled once per source string and cached, failures included
//!   ([`PredicateCache`]).
//! - **Stack**: an expression nested deeper than `tea_agent_schema::tags::cel::MAX_CEL_DEPTH`
//!   does not compile (so it fails). An expression whose tree is deeper than
//!   [`INLINE_DEPTH`] is evaluated on a dedicated thread with a large stack, so evaluation
//!   never depends on the stack size of the caller (a 2 MiB tokio worker included).

use parking_lot::RwLock;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

use cel::common::types::{
    CelBool, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelString, CelUInt,
};
use cel::common::value::Val;
use cel::objects::{Key, Map};
use cel::{Context, Env, Program};
use serde_json::Value;
use tea_agent_schema::tags::cel as cel_check;

/// The variable a route gate sees.
pub(crate) const STATE_VAR: &str = "state";
/// The variable a `@validates` predicate sees.
pub(crate) const VALUE_VAR: &str = "v";

/// Expressions whose tree is at most this deep are evaluated on the caller's thread; deeper
/// ones on a thread of their own with `DEEP_STACK` bytes of stack.
pub(crate) const INLINE_DEPTH: usize = 12;

/// The stack of the thread that evaluates deep expressions.
const DEEP_STACK: usize = 32 * 1024 * 1024;

/// The standard CEL environment (functions, macros), built once for the process.
fn env() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(Env::stdlib()))
}

/// A compiled program and whether it must be evaluated on a big stack.
#[derive(Debug)]
pub struct CompiledPredicate {
    program: Program,
    deep: bool,
}

impl CompiledPredicate {
    /// The program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// True when the expression is deeper than [`INLINE_DEPTH`] (evaluated on a big stack).
    pub(crate) fn is_deep(&self) -> bool {
        self.deep
    }

    /// Evaluates the program with `var` bound to the value `make` builds (on a thread with a
    /// big stack when the program is deep): `Some(b)` for a boolean result, `None` for an
    /// error, another type or a panic in the interpreter.
    pub(crate) fn decide_with<'v>(
        &self,
        var: &str,
        make: impl FnOnce() -> Box<dyn Val + 'v> + Send,
    ) -> Option<bool> {
        let here = || decide(&self.program, &context_with(var, make()));
        if !self.deep {
            return here();
        }
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("cel-evaluate".into())
                .stack_size(DEEP_STACK)
                .spawn_scoped(scope, here)
                .ok()
                .and_then(|handle| handle.join().ok())
                .flatten()
        })
    }
}

/// A standard context with `var` bound to `value`.
pub(crate) fn context_with<'v>(var: &str, value: Box<dyn Val + 'v>) -> Context<'v, 'v> {
    let mut context = Context::with_env(Arc::clone(env()));
    context.add_variable_as_val(var, value);
    context
}

/// Runs `program`: `Some(b)` for a boolean result, `Some(false)` for a value of another type
/// (it was evaluated, and it is not `true`: `docs/semantics.md` §11.3, case 12), `None` when it
/// could not be evaluated (an evaluation error, a panic inside the interpreter).
pub(crate) fn decide(program: &Program, context: &Context<'_, '_>) -> Option<bool> {
    match catch_unwind(AssertUnwindSafe(|| program.execute(context))) {
        Ok(Ok(cel::Value::Bool(b))) => Some(b),
        Ok(Ok(_)) => Some(false),
        _ => None,
    }
}

/// Compiles `src` with the standard environment, on a thread with a big stack. The source
/// is first checked for depth (see `tea_agent_schema::tags::cel`); a panic inside the parser
/// counts as a compile error.
fn compile(src: &str) -> Result<CompiledPredicate, String> {
    let reads = match cel_check::analyze(src) {
        Ok(reads) => reads,
        Err(cel_check::CelProblem::Syntax(message)) => return Err(message),
        Err(cel_check::CelProblem::TooDeep) => {
            return Err(format!(
                "the expression is nested more than {} levels deep",
                cel_check::MAX_CEL_DEPTH
            ))
        }
    };
    let deep = reads.depth > INLINE_DEPTH;
    // The parser recurses per bracket level: it always runs on a big stack (once per source).
    let source = src.to_owned();
    let compiled = std::thread::Builder::new()
        .name("cel-compile".into())
        .stack_size(DEEP_STACK)
        .spawn(move || catch_unwind(AssertUnwindSafe(|| env().compile(&source))))
        .map_err(|e| e.to_string())?
        .join()
        .unwrap_or_else(Err);
    match compiled {
        Ok(Ok(program)) => Ok(CompiledPredicate { program, deep }),
        Ok(Err(errors)) => Err(first_line(&errors.to_string())),
        Err(_) => Err("the CEL parser failed on this expression".to_string()),
    }
}

fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or_default().to_string()
}

/// Checks that `src` parses as CEL; on failure returns the first line of the parse error
/// (`ERROR: <input>:1:3: …`). (Host start-up checks expressions with
/// `tea_agent_schema::tags::cel`, which parses them the same way.)
pub fn check_syntax(src: &str) -> Result<(), String> {
    compile(src).map(|_| ())
}

/// Converts a JSON value to a CEL value with the mapping of semantics §3.
///
/// Predicates are evaluated on an equivalent, borrowing representation; this owned form is
/// for callers that want to inspect or bind a value themselves.
pub fn json_to_cel(value: &Value) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match number(n) {
            Number::Int(i) => cel::Value::Int(i),
            Number::UInt(u) => cel::Value::UInt(u),
            Number::Double(d) => cel::Value::Float(d),
        },
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(json_to_cel).collect())),
        Value::Object(map) => {
            let entries: HashMap<Key, cel::Value> = map
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), json_to_cel(v)))
                .collect();
            cel::Value::Map(Map {
                map: Arc::new(entries),
            })
        }
    }
}

/// A JSON number classified per semantics §3.
enum Number {
    Int(i64),
    UInt(u64),
    Double(f64),
}

fn number(n: &serde_json::Number) -> Number {
    if let Some(i) = n.as_i64() {
        Number::Int(i)
    } else if let Some(u) = n.as_u64() {
        Number::UInt(u)
    } else {
        // Without `arbitrary_precision` every non-integer number is an f64.
        Number::Double(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// The same mapping as [`json_to_cel`], built directly as the interpreter's values and
/// borrowing strings and keys from `value` (no string is copied).
pub(crate) fn json_to_val(value: &Value) -> Box<dyn Val + '_> {
    match value {
        Value::Null => Box::new(CelNull),
        Value::Bool(b) => Box::new(CelBool::from(*b)),
        Value::Number(n) => match number(n) {
            Number::Int(i) => Box::new(CelInt::from(i)),
            Number::UInt(u) => Box::new(CelUInt::from(u)),
            Number::Double(d) => Box::new(CelDouble::from(d)),
        },
        Value::String(s) => Box::new(CelString::from(s.as_str())),
        Value::Array(items) => Box::new(CelList::from(
            items.iter().map(json_to_val).collect::<Vec<_>>(),
        )),
        Value::Object(map) => Box::new(CelMap::from(
            map.iter()
                .map(|(k, v)| (CelMapKey::from(k.as_str()), json_to_val(v)))
                .collect::<HashMap<_, _>>(),
        )),
    }
}

/// A compiled program, or the first line of its compile error.
type Compiled = Result<Arc<CompiledPredicate>, String>;

/// Compiled CEL programs keyed by source string. Thread-safe; a source is compiled at most
/// once per cache (a compile failure is remembered as a failure).
#[derive(Default)]
pub struct PredicateCache {
    programs: RwLock<HashMap<String, Compiled>>,
}

impl std::fmt::Debug for PredicateCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cached = self.programs.read().len();
        f.debug_struct("PredicateCache")
            .field("cached", &cached)
            .finish()
    }
}

impl PredicateCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The process-wide cache used by the free functions [`evaluate_gate`] and
    /// [`evaluate_validates`].
    pub fn global() -> &'static PredicateCache {
        static GLOBAL: OnceLock<PredicateCache> = OnceLock::new();
        GLOBAL.get_or_init(PredicateCache::new)
    }

    /// The compiled program for `src` (compiling and caching it on first use), or the first
    /// line of its compile error.
    pub fn program(&self, src: &str) -> Result<Arc<CompiledPredicate>, String> {
        // A poisoned lock only means another thread panicked while holding it; the map itself
        // is always in a consistent state (single inserts), so keep using it.
        if let Some(hit) = self.programs.read().get(src) {
            return hit.clone();
        }
        let compiled = compile(src).map(Arc::new);
        let mut programs = self.programs.write();
        programs.entry(src.to_string()).or_insert(compiled).clone()
    }

    /// Number of distinct sources compiled so far (failures included).
    pub fn len(&self) -> usize {
        self.programs.read().len()
    }

    /// True when nothing has been compiled yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Evaluates the route gate `src` with `state` bound; true only when the result is the
    /// boolean `true`.
    pub fn evaluate_gate(&self, src: &str, state: &Value) -> bool {
        self.evaluate(src, STATE_VAR, state)
    }

    /// Evaluates the `@validates` predicate `src` with `v` bound to `value`; true only when
    /// the result is the boolean `true`.
    pub fn evaluate_validates(&self, src: &str, value: &Value) -> bool {
        self.evaluate(src, VALUE_VAR, value)
    }

    /// Evaluates the `@validates` predicate `src` with `v` bound to `value`: `Some(true)` for
    /// the boolean `true`, `Some(false)` for any other value, `None` when it could not be
    /// evaluated (an evaluation error, a program that does not compile, a panic in the
    /// interpreter). Fail-closed callers treat `None` as a failure they report as such.
    pub(crate) fn decide_validates(&self, src: &str, value: &Value) -> Option<bool> {
        match self.program(src) {
            Ok(compiled) => compiled.decide_with(VALUE_VAR, || json_to_val(value)),
            Err(_) => None,
        }
    }

    /// Binds `state` once, to evaluate several route gates against the same state without
    /// converting it again for each.
    pub fn gate_scope<'c, 's>(&'c self, state: &'s Value) -> GateScope<'c, 's> {
        GateScope {
            cache: self,
            state,
            context: bind(STATE_VAR, state),
        }
    }

    fn evaluate(&self, src: &str, var: &str, value: &Value) -> bool {
        match self.program(src) {
            Ok(compiled) if compiled.deep => run_deep(&compiled.program, var, value),
            Ok(compiled) => run(&compiled.program, &bind(var, value)),
            Err(_) => false,
        }
    }
}

/// A state bound once for many route gates (see [`PredicateCache::gate_scope`]).
pub struct GateScope<'c, 's> {
    cache: &'c PredicateCache,
    state: &'s Value,
    context: Context<'s, 's>,
}

impl std::fmt::Debug for GateScope<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateScope").finish_non_exhaustive()
    }
}

impl GateScope<'_, '_> {
    /// Evaluates the route gate `src` against the bound state; true only on boolean `true`.
    pub fn passes(&self, src: &str) -> bool {
        match self.cache.program(src) {
            Ok(compiled) if compiled.deep => run_deep(&compiled.program, STATE_VAR, self.state),
            Ok(compiled) => run(&compiled.program, &self.context),
            Err(_) => false,
        }
    }
}

/// A standard context with `var` bound to the CEL form of `value`.
fn bind<'v>(var: &str, value: &'v Value) -> Context<'v, 'v> {
    let mut context = Context::with_env(Arc::clone(env()));
    context.add_variable_as_val(var, json_to_val(value));
    context
}

/// Runs `program`; only a boolean `true` passes. Errors and panics inside the interpreter
/// fail.
fn run(program: &Program, context: &Context<'_, '_>) -> bool {
    matches!(
        catch_unwind(AssertUnwindSafe(|| program.execute(context))),
        Ok(Ok(cel::Value::Bool(true)))
    )
}

/// [`run`] on a thread of its own with a large stack, binding `var` to `value` there.
fn run_deep(program: &Program, var: &str, value: &Value) -> bool {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("cel-evaluate".into())
            .stack_size(DEEP_STACK)
            .spawn_scoped(scope, || run(program, &bind(var, value)))
            .ok()
            .and_then(|handle| handle.join().ok())
            .unwrap_or(false)
    })
}

/// Evaluates the route gate `src` with `state` bound, using [`PredicateCache::global`].
pub fn evaluate_gate(src: &str, state: &Value) -> bool {
    PredicateCache::global().evaluate_gate(src, state)
}

/// Evaluates the `@validates` predicate `src` with `v` bound, using
/// [`PredicateCache::global`].
pub fn evaluate_validates(src: &str, value: &Value) -> bool {
    PredicateCache::global().evaluate_validates(src, value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn cache_is_shareable_across_threads() {
        assert_send_sync::<PredicateCache>();
        let cache = Arc::new(PredicateCache::new());
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let cache = Arc::clone(&cache);
                std::thread::spawn(move || cache.evaluate_validates("v > 1", &json!(i)))
            })
            .collect();
        let results: Vec<bool> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(results, vec![false, false, true, true]);
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn mixed_numeric_comparisons() {
        let cache = PredicateCache::new();
        assert!(cache.evaluate_validates("50.5 >= 0", &json!(null)));
        assert!(cache.evaluate_validates("1.0 == 1", &json!(null)));
        assert!(cache.evaluate_validates("v >= 0 && v <= 100", &json!(50)));
        assert!(cache.evaluate_validates("v >= 0 && v <= 100", &json!(50.5)));
        assert!(!cache.evaluate_validates("v >= 0 && v <= 100", &json!(150)));
        // u64 beyond i64 is a uint, still comparable with an int literal.
        assert!(cache.evaluate_validates("v > 0", &json!(u64::MAX)));
        assert!(cache.evaluate_validates("v < 0", &json!(-3)));
    }

    #[test]
    fn regex_matches() {
        let cache = PredicateCache::new();
        let src = "v.matches('^[a-z0-9-]+$')";
        assert!(cache.evaluate_validates(src, &json!("my-cool-slug")));
        assert!(!cache.evaluate_validates(src, &json!("My Slug!")));
        // A non-string `v` is an evaluation error → fails.
        assert!(!cache.evaluate_validates(src, &json!(5)));
    }

    #[test]
    fn evaluation_errors_fail() {
        let cache = PredicateCache::new();
        assert!(!cache.evaluate_validates("size(v) > 0", &json!(null)));
        assert!(cache.evaluate_validates("size(v) > 0", &json!("x")));
        assert!(cache.evaluate_validates("size(v) > 0", &json!([1])));
        assert!(!cache.evaluate_gate("state.deeply.nested.value == 1", &json!({})));
        assert!(cache.evaluate_gate(
            "state.deeply.nested.value == 1",
            &json!({"deeply": {"nested": {"value": 1}}})
        ));
        assert!(!cache.evaluate_gate("nobody == 1", &json!({})));
        assert!(!cache.evaluate_gate("unknownFn(state)", &json!({})));
        // `v` is not bound in a gate, `state` is not bound in a predicate.
        assert!(!cache.evaluate_gate("v == 1", &json!(1)));
        assert!(!cache.evaluate_validates("state == 1", &json!(1)));
    }

    #[test]
    fn only_boolean_true_passes() {
        let cache = PredicateCache::new();
        assert!(!cache.evaluate_gate("state.count", &json!({"count": 3})));
        // `state.count` evaluating to the boolean `true` passes.
        assert!(cache.evaluate_gate("state.count", &json!({"count": true})));
        assert!(!cache.evaluate_gate("state.count", &json!({"count": false})));
        assert!(!cache.evaluate_gate("state.name", &json!({"name": "true"})));
        assert!(!cache.evaluate_gate("'true'", &json!({})));
    }

    #[test]
    fn route_gate_on_kind() {
        let cache = PredicateCache::new();
        let gate = "state.matrixState.kind == 'loaded'";
        assert!(!cache.evaluate_gate(gate, &json!({"matrixState": {"kind": "idle"}})));
        assert!(cache.evaluate_gate(gate, &json!({"matrixState": {"kind": "loaded"}})));
        assert!(cache.evaluate_gate("has(state.a) && has(state.a.b)", &json!({"a": {"b": null}})));
        assert!(!cache.evaluate_gate("has(state.a) && has(state.a.b)", &json!({})));
        assert!(cache.evaluate_gate("type(state.s) == string", &json!({"s": "x"})));
        assert!(cache.evaluate_gate(
            "state.items.all(i, i.qty > 0)",
            &json!({"items": [{"qty": 1}, {"qty": 2.5}]})
        ));
        assert!(cache.evaluate_gate("state.n == null", &json!({"n": null})));
    }

    #[test]
    fn compile_errors_fail_and_are_cached() {
        let cache = PredicateCache::new();
        assert!(!cache.evaluate_gate("state.a ==", &json!({"a": 1})));
        assert!(!cache.evaluate_gate("state.a ==", &json!({"a": 1})));
        assert_eq!(cache.len(), 1);
        assert!(cache.program("state.a ==").is_err());
        let first = cache.program("state.a == 1").unwrap();
        assert!(first.program().references().has_variable("state"));
        let second = cache.program("state.a == 1").unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn syntax_check_reports_first_line() {
        assert_eq!(check_syntax("v >= 0 && v <= 100"), Ok(()));
        let err = check_syntax("v >= ").unwrap_err();
        assert!(err.starts_with("ERROR: <input>:"), "{err}");
        assert!(!err.contains('\n'));
        assert!(check_syntax("").is_err());
    }

    #[test]
    fn gate_scope_binds_state_once() {
        let cache = PredicateCache::new();
        let state = json!({"count": 2, "user": {"role": "admin"}});
        let scope = cache.gate_scope(&state);
        assert!(scope.passes("state.count == 2"));
        assert!(scope.passes("state.user.role == 'admin'"));
        assert!(!scope.passes("state.count == 3"));
        assert!(!scope.passes("state.missing"));
        assert!(!scope.passes("state.count =="));
    }

    #[test]
    fn json_conversion_mapping() {
        assert_eq!(json_to_cel(&json!(null)), cel::Value::Null);
        assert_eq!(json_to_cel(&json!(true)), cel::Value::Bool(true));
        assert_eq!(json_to_cel(&json!(-5)), cel::Value::Int(-5));
        assert_eq!(json_to_cel(&json!(i64::MAX)), cel::Value::Int(i64::MAX));
        assert_eq!(
            json_to_cel(&json!(i64::MAX as u64 + 1)),
            cel::Value::UInt(i64::MAX as u64 + 1)
        );
        assert_eq!(json_to_cel(&json!(1.0)), cel::Value::Float(1.0));
        assert_eq!(json_to_cel(&json!("s")), cel::Value::from("s"));
        assert_eq!(
            json_to_cel(&json!([1, "a"])),
            cel::Value::from(vec![cel::Value::Int(1), cel::Value::from("a")])
        );
        let map = HashMap::from([("k".to_string(), cel::Value::Int(1))]);
        assert_eq!(json_to_cel(&json!({"k": 1})), cel::Value::from(map));
    }

    #[test]
    fn borrowed_and_owned_conversions_agree() {
        let samples = [
            json!(null),
            json!({"a": [1, -2, 3.5, u64::MAX, "x", null, true], "b": {"c": {}}, "": []}),
            json!([[], {}, "", 0]),
        ];
        for sample in &samples {
            let borrowed = json_to_val(sample);
            let back = cel::Value::try_from(&*borrowed).unwrap();
            assert_eq!(back, json_to_cel(sample), "{sample}");
        }
    }

    #[test]
    fn evaluation_does_not_depend_on_the_caller_stack() {
        // The deepest expression that compiles, evaluated on a thread with a small stack.
        let max = tea_agent_schema::tags::cel::MAX_CEL_DEPTH;
        let deep = format!("{}v{} + 1 == 2", "(".repeat(max), ")".repeat(max));
        let sum = format!("{} == 100", vec!["v"; 100].join(" + "));
        let too_deep = format!("{}v{} == 1", "(".repeat(max + 1), ")".repeat(max + 1));
        let cache = Arc::new(PredicateCache::new());
        let worker = Arc::clone(&cache);
        let results = std::thread::Builder::new()
            .name("small-stack".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                [
                    worker.evaluate_validates(&deep, &json!(1)),
                    worker.evaluate_validates(&sum, &json!(1)),
                    worker.evaluate_validates(&too_deep, &json!(1)),
                    worker
                        .gate_scope(&json!({"n": 1}))
                        .passes("((((((((((((((state.n)))))))))))))) == 1"),
                ]
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(results, [true, true, false, true]);
        assert!(cache
            .program(&format!("{}v{}", "(".repeat(max + 1), ")".repeat(max + 1)))
            .unwrap_err()
            .contains("nested more than"));
    }

    #[test]
    fn free_functions_use_the_global_cache() {
        assert!(evaluate_gate("state.ok == true", &json!({"ok": true})));
        assert!(evaluate_validates("v == 'x'", &json!("x")));
        assert!(PredicateCache::global().program("state.ok == true").is_ok());
    }
}
