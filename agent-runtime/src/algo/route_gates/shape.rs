//! What a route gate reads of the state, found in its compiled expression tree: the field
//! chains under `state` (to know which patch ops can change its result), and whether it has
//! one of the list shapes kept incrementally ([`Shape`]).

use cel::common::ast::{operators, Expr, LiteralValue};
use cel::parser::Expression;
use tea_agent_schema::tags::cel::{children, select_chain};

use crate::algo::cel_eval::STATE_VAR;

/// Which parts of the state a gate reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reads {
    /// `state` itself is read as a value (`size(state)`, `state['k']`, `state == …`): any
    /// change may change the result.
    Whole,
    /// Only these field chains under `state` (`state.a.b` is `["a", "b"]`); a chain is read
    /// whole, so a change anywhere under it, or to any prefix of it, may change the result.
    Chains(Vec<Vec<String>>),
}

/// The fold of a list macro, as the parser expands it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fold {
    /// `l.exists(x, P)`.
    Exists,
    /// `l.all(x, P)`.
    All,
    /// `l.exists_one(x, P)` (or `existsOne`).
    ExistsOne,
}

/// A gate kept incrementally: `[!] state.<path>.<fold>(x, P)` where `P` does not read
/// `state`, so the truth of `P` on one element depends on that element alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shape {
    pub fold: Fold,
    /// A `!` in front of the macro.
    pub negated: bool,
    /// The list's field chain under `state` (never empty).
    pub path: Vec<String>,
}

/// The read chains of `expr` under [`STATE_VAR`]; `state` bound by a macro inside does not
/// count (it is the macro's variable there).
pub(crate) fn reads(expr: &Expression) -> Reads {
    let mut chains = Vec::new();
    if collect(expr, &mut Vec::new(), &mut chains) {
        Reads::Chains(chains)
    } else {
        Reads::Whole
    }
}

/// Pushes the chains under a free `state` to `chains`; false when `state` is read bare.
fn collect(expr: &Expression, bound: &mut Vec<String>, chains: &mut Vec<Vec<String>>) -> bool {
    // A `has()` test reads its operand's chain, which includes the tested field.
    if let Some((root, path)) = select_chain(expr) {
        if root != STATE_VAR || bound.iter().any(|b| b == root) {
            return true;
        }
        if path.is_empty() {
            return false;
        }
        if !chains.contains(&path) {
            chains.push(path);
        }
        return true;
    }
    match &expr.expr {
        Expr::Comprehension(c) => {
            if !collect(&c.iter_range, bound, chains) || !collect(&c.accu_init, bound, chains) {
                return false;
            }
            let before = bound.len();
            bound.push(c.iter_var.clone());
            bound.extend(c.iter_var2.clone());
            bound.push(c.accu_var.clone());
            let ok = [&c.loop_cond, &c.loop_step, &c.result]
                .into_iter()
                .all(|e| collect(e, bound, chains));
            bound.truncate(before);
            ok
        }
        _ => children(expr)
            .into_iter()
            .all(|child| collect(child, bound, chains)),
    }
}

/// The incremental shape of `expr`, when it has one.
pub(crate) fn shape(expr: &Expression) -> Option<Shape> {
    let (negated, inner) = match call(expr, operators::LOGICAL_NOT, 1) {
        Some([operand]) => (true, operand),
        _ => (false, expr),
    };
    let Expr::Comprehension(c) = &inner.expr else {
        return None;
    };
    if c.iter_var2.is_some() || c.iter_var == c.accu_var {
        return None;
    }
    let accu = c.accu_var.as_str();
    let fold = fold_of(c, accu)?;
    let (root, path) = select_chain(&c.iter_range)?;
    if root != STATE_VAR || path.is_empty() || plain_selects(&c.iter_range).is_none() {
        return None;
    }
    // `P`: the step without the accumulator; it must not read `state` (bound only to
    // `iter_var` and the accumulator inside the macro).
    let step_reads = {
        let mut bound = vec![c.iter_var.clone(), c.accu_var.clone()];
        let mut chains = Vec::new();
        let bare_ok = collect(&c.loop_step, &mut bound, &mut chains);
        bare_ok && chains.is_empty()
    };
    step_reads.then_some(Shape {
        fold,
        negated,
        path,
    })
}

/// `Some(())` when every select of the chain is a plain field read (no `has()` test).
fn plain_selects(expr: &Expression) -> Option<()> {
    let mut node = expr;
    loop {
        match &node.expr {
            Expr::Ident(_) => return Some(()),
            Expr::Select(select) if !select.test => node = &select.operand,
            _ => return None,
        }
    }
}

/// Which macro expanded into `c`: exactly the comprehensions of the standard `exists`, `all`
/// and `exists_one` macros (their `@result` accumulator cannot be written in CEL source).
fn fold_of(c: &cel::common::ast::ComprehensionExpr, accu: &str) -> Option<Fold> {
    let is_accu = |e: &Expression| matches!(&e.expr, Expr::Ident(n) if n == accu);
    if !accu.starts_with('@') {
        return None;
    }
    let bool_lit = |e: &Expression, want: bool| matches!(&e.expr, Expr::Literal(LiteralValue::Boolean(b)) if *b.inner() == want);
    let int_lit = |e: &Expression, want: i64| matches!(&e.expr, Expr::Literal(LiteralValue::Int(i)) if *i.inner() == want);
    let folds_accu =
        |e: &Expression, op: &str| matches!(call(e, op, 2), Some([a, _]) if is_accu(a));
    // exists: init false, cond @not_strictly_false(!@result), step @result || P.
    if bool_lit(&c.accu_init, false)
        && is_accu(&c.result)
        && folds_accu(&c.loop_step, operators::LOGICAL_OR)
        && matches!(call(&c.loop_cond, operators::NOT_STRICTLY_FALSE, 1),
            Some([not]) if matches!(call(not, operators::LOGICAL_NOT, 1), Some([a]) if is_accu(a)))
    {
        return Some(Fold::Exists);
    }
    // all: init true, cond @not_strictly_false(@result), step @result && P.
    if bool_lit(&c.accu_init, true)
        && is_accu(&c.result)
        && folds_accu(&c.loop_step, operators::LOGICAL_AND)
        && matches!(call(&c.loop_cond, operators::NOT_STRICTLY_FALSE, 1), Some([a]) if is_accu(a))
    {
        return Some(Fold::All);
    }
    // exists_one: init 0, cond true, step P ? @result + 1 : @result, result @result == 1.
    let counts = match call(&c.loop_step, operators::CONDITIONAL, 3) {
        Some([_, plus, otherwise]) => {
            is_accu(otherwise)
                && matches!(call(plus, operators::ADD, 2), Some([a, one]) if is_accu(a) && int_lit(one, 1))
        }
        _ => false,
    };
    let result_is_one = matches!(call(&c.result, operators::EQUALS, 2), Some([a, one]) if is_accu(a) && int_lit(one, 1));
    (int_lit(&c.accu_init, 0) && bool_lit(&c.loop_cond, true) && counts && result_is_one)
        .then_some(Fold::ExistsOne)
}

/// The arguments of a global call of `function` with `arity` arguments.
fn call<'e>(expr: &'e Expression, function: &str, arity: usize) -> Option<&'e [Expression]> {
    match &expr.expr {
        Expr::Call(c) if c.target.is_none() && c.func_name == function && c.args.len() == arity => {
            Some(&c.args)
        }
        _ => None,
    }
}
