//! The walk over a parsed expression: the type of each node, scopes of comprehension
//! variables, field reads. The operators and functions are in `ops.rs`.

use cel::common::ast::{EntryExpr, Expr, LiteralValue, SelectExpr};
use cel::parser::Expression;
use serde_json::Value;

use super::ty::{Open, Ty};
use super::{Finding, Report};
use crate::tags::cel::{children, select_chain, TYPE_NAMES};
use crate::tags::suggest::closest;

/// The state of one check.
pub(crate) struct Checker<'a, 's> {
    /// The expression's text, quoted in every finding.
    pub(super) source: &'s str,
    /// Where `$ref`s resolve.
    root: &'a Value,
    /// Variables in scope, innermost last: the bound variable first, then comprehension
    /// variables.
    scope: Vec<(String, Ty<'a>)>,
    /// Paths the expression guards with `has(…)` or a comparison with `null`.
    guarded: Vec<String>,
    report: Report,
}

impl<'a, 's> Checker<'a, 's> {
    /// A checker with `var` bound to `ty`.
    pub(crate) fn new(source: &'s str, root: &'a Value, var: &str, ty: Ty<'a>) -> Self {
        Checker {
            source,
            root,
            scope: vec![(var.to_owned(), ty)],
            guarded: Vec::new(),
            report: Report::default(),
        }
    }

    /// Checks the whole expression.
    pub(crate) fn run(&mut self, expr: &Expression) {
        self.collect_guards(expr);
        let ty = self.ty(expr);
        let ty = self.expand(&ty);
        if !matches!(ty, Ty::Bool | Ty::Dyn | Ty::OneOf(_) | Ty::Opt(_)) {
            let is_bool_enum = matches!(&ty, Ty::Enum(v) if v.iter().all(Value::is_boolean));
            if !is_bool_enum {
                self.error(
                    format!(
                        "`{}` gives {}, not a boolean, so it never passes",
                        self.source,
                        ty.describe()
                    ),
                    "write a condition (a comparison, `has(…)`, `exists(…)`)".into(),
                );
            }
        }
    }

    /// The findings.
    pub(crate) fn into_report(self) -> Report {
        self.report
    }

    /// Records an error (once).
    pub(super) fn error(&mut self, problem: String, fix: String) {
        let finding = Finding { problem, fix };
        if !self.report.errors.contains(&finding) {
            self.report.errors.push(finding);
        }
    }

    /// Records a warning (once).
    fn warning(&mut self, problem: String, fix: String) {
        let finding = Finding { problem, fix };
        if !self.report.warnings.contains(&finding) {
            self.report.warnings.push(finding);
        }
    }

    /// `ty` with its lazy layers read.
    pub(super) fn expand(&self, ty: &Ty<'a>) -> Ty<'a> {
        ty.expand(self.root)
    }

    /// `ty` read, without its `null` alternative.
    pub(super) fn solid(&self, ty: &Ty<'a>) -> Ty<'a> {
        match self.expand(ty) {
            Ty::Opt(inner) => self.solid(&inner),
            other => other,
        }
    }

    /// The paths of `has(…)` tests and of comparisons with `null`.
    fn collect_guards(&mut self, expr: &Expression) {
        let mut stack = vec![expr];
        while let Some(node) = stack.pop() {
            match &node.expr {
                Expr::Select(select) if select.test => self.guarded.push(render(node)),
                Expr::Call(call) if matches!(call.func_name.as_str(), "_==_" | "_!=_") => {
                    if let [a, b] = call.args.as_slice() {
                        for (side, other) in [(a, b), (b, a)] {
                            if matches!(other.expr, Expr::Literal(LiteralValue::Null)) {
                                self.guarded.push(render(side));
                            }
                        }
                    }
                }
                _ => {}
            }
            stack.extend(children(node));
        }
    }

    /// The type of `expr`, reporting what is wrong inside it.
    pub(super) fn ty(&mut self, expr: &Expression) -> Ty<'a> {
        match &expr.expr {
            Expr::Literal(literal) => literal_ty(literal),
            Expr::Ident(name) => self.ident(name),
            Expr::Select(select) => self.select(expr, select),
            Expr::Call(call) => self.call(expr, call),
            Expr::List(list) => {
                let items: Vec<Ty<'a>> = list.elements.iter().map(|e| self.ty(e)).collect();
                Ty::List(Box::new(self.join_all(items)))
            }
            Expr::Map(map) => {
                let mut values = Vec::new();
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(entry) = &entry.expr {
                        self.ty(&entry.key);
                        values.push(self.ty(&entry.value));
                    }
                }
                Ty::Map(Box::new(self.join_all(values)))
            }
            Expr::Struct(_) => {
                for child in children(expr) {
                    self.ty(child);
                }
                Ty::Dyn
            }
            Expr::Comprehension(c) => {
                let range = self.ty(&c.iter_range);
                let (first, second) = self.range_vars(&c.iter_range, &range);
                let accu = self.ty(&c.accu_init);
                let before = self.scope.len();
                match &c.iter_var2 {
                    Some(var2) => {
                        self.scope.push((c.iter_var.clone(), first));
                        self.scope.push((var2.clone(), second));
                    }
                    None => self.scope.push((c.iter_var.clone(), first)),
                }
                self.scope.push((c.accu_var.clone(), accu.clone()));
                self.ty(&c.loop_cond);
                let step = self.ty(&c.loop_step);
                let step = self.expand(&step);
                let accu = match step {
                    Ty::List(_) | Ty::Bool | Ty::Int => step,
                    _ => accu,
                };
                self.scope.pop();
                self.scope.push((c.accu_var.clone(), accu));
                let result = self.ty(&c.result);
                self.scope.truncate(before);
                result
            }
            Expr::Unspecified => Ty::Dyn,
        }
    }

    /// The variables a comprehension over `range` binds: (item or key, value or item).
    fn range_vars(&mut self, range_expr: &Expression, range: &Ty<'a>) -> (Ty<'a>, Ty<'a>) {
        match self.solid(range) {
            Ty::List(item) => (*item.clone(), *item),
            Ty::Map(value) => (Ty::String, *value),
            Ty::Object(..) => (Ty::String, Ty::Dyn),
            Ty::Dyn | Ty::OneOf(_) => (Ty::Dyn, Ty::Dyn),
            other => {
                self.error(
                    format!(
                        "`{}` ranges over `{}`, which is {}",
                        self.source,
                        render(range_expr),
                        other.describe()
                    ),
                    "exists, all, exists_one, map and filter range over lists and maps".into(),
                );
                (Ty::Dyn, Ty::Dyn)
            }
        }
    }

    /// A variable's type: innermost binding first, then CEL's type names.
    fn ident(&self, name: &str) -> Ty<'a> {
        if let Some((_, ty)) = self.scope.iter().rev().find(|(n, _)| n == name) {
            return ty.clone();
        }
        if TYPE_NAMES.contains(&name) {
            return Ty::Type;
        }
        // Out of scope: reported by the scope check.
        Ty::Dyn
    }

    /// `operand.field` (or `has(operand.field)`).
    fn select(&mut self, expr: &Expression, select: &SelectExpr) -> Ty<'a> {
        let base = self.ty(&select.operand);
        let found = self.field(expr, &select.operand, &base, &select.field, select.test);
        if select.test {
            Ty::Bool
        } else {
            found
        }
    }

    /// The type of field `name` of `base` (the type of `operand`); `expr` is the whole read.
    pub(super) fn field(
        &mut self,
        expr: &Expression,
        operand: &Expression,
        base: &Ty<'a>,
        name: &str,
        test: bool,
    ) -> Ty<'a> {
        match self.expand(base) {
            Ty::Opt(inner) => {
                let at = render(operand);
                if !test && !self.guarded.contains(&at) {
                    self.warning(
                        format!(
                            "`{}` reads `{}`, but `{at}` may be null or absent",
                            self.source,
                            render(expr)
                        ),
                        format!("guard the read: `{at} != null && …` (or `has({at})`)"),
                    );
                }
                self.field(expr, operand, &inner, name, test)
            }
            Ty::Dyn => {
                let at = render(operand);
                if select_chain(operand).is_some() && !self.report.dynamic.contains(&at) {
                    self.report.dynamic.push(at);
                }
                Ty::Dyn
            }
            Ty::Map(value) => *value,
            Ty::Object(fields, open) => match fields.iter().find(|f| f.name == name) {
                Some(f) if f.optional => Ty::Opt(Box::new(f.ty.clone())),
                Some(f) => f.ty.clone(),
                None => match open {
                    Open::Extra(values) => *values,
                    Open::Closed => {
                        let known: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
                        self.no_field(expr, operand, name, &known);
                        Ty::Dyn
                    }
                },
            },
            Ty::OneOf(members) => self.field_of_members(expr, operand, &members, name),
            other @ (Ty::List(_) | Ty::String) if matches!(name, "length" | "size") => {
                self.error(
                    format!(
                        "`{}` reads `{}` of {}",
                        self.source,
                        render(expr),
                        other.describe()
                    ),
                    format!("CEL has no `.{name}`: use size({})", render(operand)),
                );
                Ty::Dyn
            }
            other => {
                self.error(
                    format!(
                        "`{}` reads `{}`, but `{}` is {}",
                        self.source,
                        render(expr),
                        render(operand),
                        other.describe()
                    ),
                    "read fields only from objects".into(),
                );
                Ty::Dyn
            }
        }
    }

    /// A field of one of several shapes: known in any object member, or dynamic when a
    /// member is not an object with named fields.
    fn field_of_members(
        &mut self,
        expr: &Expression,
        operand: &Expression,
        members: &[Ty<'a>],
        name: &str,
    ) -> Ty<'a> {
        let mut found = Vec::new();
        let mut known: Vec<String> = Vec::new();
        for member in members {
            match self.solid(member) {
                Ty::Object(fields, Open::Closed) => {
                    for f in fields {
                        if f.name == name {
                            found.push(f.ty.clone());
                        } else if !known.contains(&f.name) {
                            known.push(f.name.clone());
                        }
                    }
                }
                _ => return Ty::Dyn,
            }
        }
        if found.is_empty() {
            let known: Vec<&str> = known.iter().map(String::as_str).collect();
            self.no_field(expr, operand, name, &known);
            return Ty::Dyn;
        }
        self.join_all(found)
    }

    /// The error for a field that is not there.
    fn no_field(&mut self, expr: &Expression, operand: &Expression, name: &str, known: &[&str]) {
        let at = render(operand);
        let list = if known.is_empty() {
            format!("`{at}` has no fields")
        } else {
            format!("the fields of `{at}` are: {}", known.join(", "))
        };
        let fix = match closest(name, known) {
            Some(index) => format!("did you mean `{}`? {list}", known[index]),
            None => list,
        };
        self.error(
            format!(
                "`{}` reads `{}`, which is not in the schema",
                self.source,
                render(expr)
            ),
            fix,
        );
    }

    /// One type for several: the common one, else dynamic. Empty lists' `Dyn` items give
    /// way to the other side's.
    pub(super) fn join_all(&self, types: Vec<Ty<'a>>) -> Ty<'a> {
        let mut types = types.into_iter();
        let Some(first) = types.next() else {
            return Ty::Dyn;
        };
        types.fold(first, |a, b| self.join(&a, &b))
    }

    /// See [`Checker::join_all`].
    pub(super) fn join(&self, a: &Ty<'a>, b: &Ty<'a>) -> Ty<'a> {
        let (x, y) = (self.expand(a), self.expand(b));
        match (&x, &y) {
            (Ty::Enum(p), Ty::Enum(q)) => {
                let mut values = p.clone();
                values.extend(q.iter().filter(|v| !p.contains(v)).cloned());
                Ty::Enum(values)
            }
            (Ty::List(p), Ty::List(q)) => match (self.expand(p), self.expand(q)) {
                (Ty::Dyn, _) => y.clone(),
                (_, Ty::Dyn) => x.clone(),
                _ => Ty::List(Box::new(self.join(p, q))),
            },
            (Ty::Null, other) | (other, Ty::Null) => Ty::Opt(Box::new(other.clone())),
            _ if std::mem::discriminant(&x) == std::mem::discriminant(&y)
                && matches!(
                    x,
                    Ty::Bool | Ty::Int | Ty::Uint | Ty::Double | Ty::String | Ty::Bytes | Ty::Type
                ) =>
            {
                x.clone()
            }
            _ => Ty::Dyn,
        }
    }
}

/// The type of a literal.
fn literal_ty<'a>(literal: &LiteralValue) -> Ty<'a> {
    match literal {
        LiteralValue::Boolean(_) => Ty::Bool,
        LiteralValue::Bytes(_) => Ty::Bytes,
        LiteralValue::Double(_) => Ty::Double,
        LiteralValue::Int(_) => Ty::Int,
        LiteralValue::Null => Ty::Null,
        LiteralValue::String(_) => Ty::String,
        LiteralValue::UInt(_) => Ty::Uint,
    }
}

/// A literal as JSON, for enum checks (`None` for bytes and null).
pub(super) fn literal_json(expr: &Expression) -> Option<Value> {
    let Expr::Literal(literal) = &expr.expr else {
        return None;
    };
    Some(match literal {
        LiteralValue::Boolean(b) => Value::Bool(*b.inner()),
        LiteralValue::Double(d) => serde_json::Number::from_f64(*d.inner())?.into(),
        LiteralValue::Int(i) => Value::from(*i.inner()),
        LiteralValue::UInt(u) => Value::from(*u.inner()),
        LiteralValue::String(s) => Value::String(s.inner().to_owned()),
        LiteralValue::Bytes(_) | LiteralValue::Null => return None,
    })
}

/// A short rendering of an expression for messages: paths, indexes and literals as
/// written, anything else `(…)`.
pub(super) fn render(expr: &Expression) -> String {
    let mut out = String::new();
    render_into(expr, &mut out, 0);
    out
}

/// See [`render`]; `depth` bounds the recursion.
fn render_into(expr: &Expression, out: &mut String, depth: usize) {
    if depth > 16 {
        out.push('…');
        return;
    }
    match &expr.expr {
        Expr::Ident(name) => out.push_str(name),
        Expr::Select(select) => {
            render_into(&select.operand, out, depth + 1);
            out.push('.');
            out.push_str(&select.field);
        }
        Expr::Call(call) if call.func_name == "_[_]" && call.args.len() == 2 => {
            render_into(&call.args[0], out, depth + 1);
            out.push('[');
            render_into(&call.args[1], out, depth + 1);
            out.push(']');
        }
        Expr::Literal(_) => match literal_json(expr) {
            Some(Value::String(s)) => {
                out.push('\'');
                out.push_str(&s);
                out.push('\'');
            }
            Some(value) => out.push_str(&value.to_string()),
            None if matches!(expr.expr, Expr::Literal(LiteralValue::Null)) => out.push_str("null"),
            None => out.push_str("b'…'"),
        },
        _ => out.push_str("(…)"),
    }
}
