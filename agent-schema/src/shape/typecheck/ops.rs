//! Operators and functions: what each accepts, as the runtime's CEL (`cel::Env::stdlib()`,
//! without the `chrono` feature) evaluates them.

use cel::common::ast::{CallExpr, Expr};
use cel::parser::Expression;
use serde_json::Value;

use super::check::{literal_json, render, Checker};
use super::ty::Ty;
use crate::tags::suggest::closest;

/// The functions the runtime knows, for the "no such function" help.
const FUNCTIONS: &str = "size, contains, startsWith, endsWith, matches, int, uint, double, \
                         string, bool, bytes, dyn, type, and the macros has, all, exists, \
                         exists_one, map, filter";

/// What a value is, for comparisons: values of different kinds are never equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Any,
    Bool,
    Number,
    Text,
    Bytes,
    List,
    Map,
}

/// The kind of a read type.
fn kind(ty: &Ty<'_>) -> Kind {
    match ty {
        Ty::Bool => Kind::Bool,
        Ty::Int | Ty::Uint | Ty::Double => Kind::Number,
        Ty::String => Kind::Text,
        Ty::Bytes => Kind::Bytes,
        Ty::List(_) => Kind::List,
        Ty::Map(_) | Ty::Object(..) => Kind::Map,
        Ty::Enum(values) => match values.first() {
            Some(Value::String(_)) => Kind::Text,
            Some(Value::Number(_)) => Kind::Number,
            Some(Value::Bool(_)) => Kind::Bool,
            _ => Kind::Any,
        },
        _ => Kind::Any,
    }
}

impl<'a> Checker<'a, '_> {
    /// A call: an operator, a function or a method.
    pub(super) fn call(&mut self, expr: &Expression, call: &CallExpr) -> Ty<'a> {
        let name = call.func_name.as_str();
        let target = call.target.as_deref();
        let args = call.args.as_slice();
        match (name, target, args) {
            ("_&&_" | "_||_", None, _) | ("!_", None, [_]) => {
                for arg in args {
                    self.condition(arg);
                }
                Ty::Bool
            }
            ("@not_strictly_false", None, _) => {
                for arg in args {
                    self.ty(arg);
                }
                Ty::Bool
            }
            ("_?_:_", None, [cond, yes, no]) => {
                self.condition(cond);
                let (yes, no) = (self.ty(yes), self.ty(no));
                self.join(&yes, &no)
            }
            ("_==_" | "_!=_", None, [a, b]) => {
                let (ta, tb) = (self.ty(a), self.ty(b));
                self.equality(a, &ta, b, &tb);
                Ty::Bool
            }
            ("_<_" | "_<=_" | "_>_" | "_>=_", None, [a, b]) => {
                let (ta, tb) = (self.ty(a), self.ty(b));
                let (ka, kb) = (kind(&self.solid(&ta)), kind(&self.solid(&tb)));
                let ordered = |k| matches!(k, Kind::Number | Kind::Text | Kind::Bytes | Kind::Bool);
                let fine = (ka == Kind::Any || ordered(ka))
                    && (kb == Kind::Any || ordered(kb))
                    && (ka == kb || ka == Kind::Any || kb == Kind::Any);
                if !fine {
                    self.mismatch("orders", a, &ta, b, &tb);
                }
                Ty::Bool
            }
            ("_+_" | "_-_" | "_*_" | "_/_" | "_%_", None, [a, b]) => {
                let (ta, tb) = (self.ty(a), self.ty(b));
                self.arithmetic(name, a, &ta, b, &tb)
            }
            ("-_", None, [a]) => {
                let ta = self.ty(a);
                match self.solid(&ta) {
                    t @ (Ty::Int | Ty::Double) => t,
                    Ty::Dyn | Ty::OneOf(_) | Ty::Enum(_) => Ty::Dyn,
                    other => {
                        self.wrong_operand(a, &other, "negates", "only numbers have a sign");
                        Ty::Dyn
                    }
                }
            }
            ("_[_]", None, [a, index]) => {
                let ta = self.ty(a);
                let ti = self.ty(index);
                self.index(expr, a, &ta, index, &ti)
            }
            ("@in", None, [item, collection]) => {
                let ti = self.ty(item);
                let tc = self.ty(collection);
                self.membership(item, &ti, collection, &tc);
                Ty::Bool
            }
            ("size", None, [a]) | ("size", Some(a), []) => {
                let ta = self.ty(a);
                match self.solid(&ta) {
                    Ty::String | Ty::Bytes | Ty::List(_) | Ty::Map(_) | Ty::Object(..) => {}
                    Ty::Dyn | Ty::OneOf(_) => {}
                    Ty::Enum(values) if values.iter().all(Value::is_string) => {}
                    other => self.wrong_operand(
                        a,
                        &other,
                        "takes size() of",
                        "size() counts the items of a string, bytes, a list or a map",
                    ),
                }
                Ty::Int
            }
            ("contains" | "startsWith" | "endsWith" | "matches", Some(s), [arg])
            | ("matches", None, [s, arg]) => {
                for operand in [s, arg] {
                    let t = self.ty(operand);
                    let t = self.solid(&t);
                    if !matches!(kind(&t), Kind::Text | Kind::Any) {
                        let what = format!("calls {name}() with");
                        self.wrong_operand(operand, &t, &what, "it works on strings");
                    }
                }
                Ty::Bool
            }
            (
                "int" | "uint" | "double" | "string" | "bool" | "bytes" | "dyn" | "type",
                None,
                [a],
            ) => {
                self.ty(a);
                match name {
                    "int" => Ty::Int,
                    "uint" => Ty::Uint,
                    "double" => Ty::Double,
                    "string" => Ty::String,
                    "bool" => Ty::Bool,
                    "bytes" => Ty::Bytes,
                    "type" => Ty::Type,
                    _ => Ty::Dyn,
                }
            }
            _ => {
                self.walk_args(target, args);
                let optional = matches!(
                    name,
                    "_?._" | "_[?_]" | "hasValue" | "value" | "or" | "orValue" | "optMap"
                ) || name.starts_with("optional.")
                    || matches!(target.map(|t| &t.expr), Some(Expr::Ident(n)) if n == "optional");
                if !optional {
                    self.unknown_function(name);
                }
                Ty::Dyn
            }
        }
    }

    /// Checks every operand of a call the checker does not know.
    fn walk_args(&mut self, target: Option<&Expression>, args: &[Expression]) {
        if let Some(t) = target {
            self.ty(t);
        }
        for arg in args {
            self.ty(arg);
        }
    }

    /// A function the runtime's CEL does not have.
    fn unknown_function(&mut self, name: &str) {
        let names: Vec<&str> = FUNCTIONS
            .split([',', ' '])
            .filter(|n| !n.is_empty() && *n != "and" && *n != "the" && *n != "macros")
            .collect();
        let fix = match closest(name, &names) {
            Some(i) => format!(
                "did you mean `{}`? The functions are: {FUNCTIONS}",
                names[i]
            ),
            None => format!("the functions are: {FUNCTIONS}"),
        };
        self.error(
            format!(
                "`{}` calls `{name}`, which CEL here does not have",
                self.source
            ),
            fix,
        );
    }

    /// An operand of `&&`, `||`, `!` or `?:` must be a boolean.
    fn condition(&mut self, arg: &Expression) {
        let t = self.ty(arg);
        let t = self.solid(&t);
        if !matches!(kind(&t), Kind::Bool | Kind::Any) {
            self.wrong_operand(
                arg,
                &t,
                "uses as a condition",
                "compare it: `&&`, `||`, `!` and `?:` take booleans",
            );
        }
    }

    /// `expr` applies `what` to `operand` of a type it does not take.
    fn wrong_operand(&mut self, operand: &Expression, ty: &Ty<'a>, what: &str, fix: &str) {
        self.error(
            format!(
                "`{}` {what} `{}`, which is {}",
                self.source,
                render(operand),
                ty.describe()
            ),
            fix.to_owned(),
        );
    }

    /// Two operands of kinds `verb` does not combine.
    fn mismatch(&mut self, verb: &str, a: &Expression, ta: &Ty<'a>, b: &Expression, tb: &Ty<'a>) {
        let (ta, tb) = (self.solid(ta), self.solid(tb));
        self.error(
            format!(
                "`{}` {verb} `{}` ({}) with `{}` ({})",
                self.source,
                render(a),
                ta.describe(),
                render(b),
                tb.describe()
            ),
            "use values of the same type (convert with string(…), int(…) or double(…))".into(),
        );
    }

    /// `a == b`: same kinds, and a literal compared with an enum is one of its values.
    fn equality(&mut self, a: &Expression, ta: &Ty<'a>, b: &Expression, tb: &Ty<'a>) {
        let (sa, sb) = (self.solid(ta), self.solid(tb));
        for (side, ty, other) in [(a, &sa, b), (b, &sb, a)] {
            if let (Ty::Enum(values), Some(literal @ Value::String(_))) = (ty, literal_json(other))
            {
                if kind(ty) == Kind::Text && !values.contains(&literal) {
                    self.not_in_enum(side, values, &literal);
                    return;
                }
            }
        }
        let (ka, kb) = (kind(&sa), kind(&sb));
        if ka != kb && ka != Kind::Any && kb != Kind::Any {
            self.mismatch("compares", a, ta, b, tb);
        }
    }

    /// `literal` is not among `values` of `side`'s enum.
    fn not_in_enum(&mut self, side: &Expression, values: &[Value], literal: &Value) {
        let shown: Vec<String> = values.iter().map(show).collect();
        let texts: Vec<String> = values
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect();
        let names: Vec<&str> = texts.iter().map(String::as_str).collect();
        let list = format!("the values of `{}` are: {}", render(side), shown.join(", "));
        let fix = match literal.as_str().and_then(|l| closest(l, &names)) {
            Some(i) => format!("did you mean {}? {list}", shown[i]),
            None => list,
        };
        self.error(
            format!(
                "`{}` compares `{}` with {}, which is not one of its values",
                self.source,
                render(side),
                show(literal)
            ),
            fix,
        );
    }

    /// `a + b` and the other arithmetic operators.
    fn arithmetic(
        &mut self,
        op: &str,
        a: &Expression,
        ta: &Ty<'a>,
        b: &Expression,
        tb: &Ty<'a>,
    ) -> Ty<'a> {
        let (sa, sb) = (self.solid(ta), self.solid(tb));
        let verb = match op {
            "_+_" => "adds",
            "_-_" => "subtracts",
            "_*_" => "multiplies",
            "_/_" => "divides",
            _ => "takes the remainder of",
        };
        let numeric = |t: &Ty<'_>| matches!(t, Ty::Int | Ty::Uint | Ty::Double);
        match (&sa, &sb) {
            (Ty::Dyn | Ty::OneOf(_) | Ty::Enum(_), _)
            | (_, Ty::Dyn | Ty::OneOf(_) | Ty::Enum(_)) => Ty::Dyn,
            (x, y) if numeric(x) && numeric(y) => {
                if std::mem::discriminant(x) == std::mem::discriminant(y) {
                    x.clone()
                } else {
                    self.error(
                        format!(
                            "`{}` {verb} `{}` ({}) and `{}` ({}): CEL does not mix int, uint \
                             and double",
                            self.source,
                            render(a),
                            type_name(x),
                            render(b),
                            type_name(y)
                        ),
                        "convert one side (double(…), int(…)) or write the literal as the other \
                         type (`1.0`, `1u`)"
                            .into(),
                    );
                    Ty::Dyn
                }
            }
            (Ty::String, Ty::String) | (Ty::Bytes, Ty::Bytes) if op == "_+_" => sa.clone(),
            (Ty::List(_), Ty::List(_)) if op == "_+_" => self.join(&sa, &sb),
            _ => {
                self.mismatch(verb, a, ta, b, tb);
                Ty::Dyn
            }
        }
    }

    /// `a[index]`.
    fn index(
        &mut self,
        expr: &Expression,
        a: &Expression,
        ta: &Ty<'a>,
        index: &Expression,
        ti: &Ty<'a>,
    ) -> Ty<'a> {
        let ti = self.solid(ti);
        match self.solid(ta) {
            Ty::List(item) => {
                if !matches!(kind(&ti), Kind::Number | Kind::Any) {
                    self.wrong_operand(
                        index,
                        &ti,
                        "indexes a list with",
                        "a list index is a number",
                    );
                }
                *item
            }
            Ty::Map(value) => *value,
            base @ Ty::Object(..) => match literal_json(index) {
                Some(Value::String(name)) => self.field(expr, a, &base, &name, false),
                _ => Ty::Dyn,
            },
            Ty::Dyn | Ty::OneOf(_) => Ty::Dyn,
            other => {
                self.wrong_operand(a, &other, "indexes", "only lists and maps have items");
                Ty::Dyn
            }
        }
    }

    /// `item in collection`.
    fn membership(&mut self, item: &Expression, ti: &Ty<'a>, collection: &Expression, tc: &Ty<'a>) {
        match self.solid(tc) {
            Ty::List(element) => {
                if let Expr::List(list) = &collection.expr {
                    for element in &list.elements {
                        let te = literal_json(element).map_or(Ty::Dyn, |l| literal_kind(&l));
                        self.equality(item, ti, element, &te);
                    }
                } else {
                    let si = self.solid(ti);
                    let se = self.solid(&element);
                    let (ki, ke) = (kind(&si), kind(&se));
                    if ki != ke && ki != Kind::Any && ke != Kind::Any {
                        self.mismatch("looks for", item, ti, collection, tc);
                    }
                }
            }
            Ty::Map(_) | Ty::Object(..) => {
                let si = self.solid(ti);
                if !matches!(kind(&si), Kind::Text | Kind::Any) {
                    self.mismatch("looks for", item, ti, collection, tc);
                }
            }
            Ty::String => self.error(
                format!(
                    "`{}` uses `in` on the string `{}`",
                    self.source,
                    render(collection)
                ),
                format!("use {}.contains(…)", render(collection)),
            ),
            Ty::Dyn | Ty::OneOf(_) => {}
            other => self.wrong_operand(
                collection,
                &other,
                "looks inside",
                "`in` looks in lists and maps",
            ),
        }
    }
}

/// The type of a literal value (for enum checks).
fn literal_kind<'a>(literal: &Value) -> Ty<'a> {
    match literal {
        Value::String(_) => Ty::String,
        Value::Bool(_) => Ty::Bool,
        Value::Number(n) if n.is_f64() => Ty::Double,
        Value::Number(_) => Ty::Int,
        _ => Ty::Dyn,
    }
}

/// A value as CEL writes it: strings in single quotes.
fn show(value: &Value) -> String {
    match value {
        Value::String(s) => format!("'{s}'"),
        other => other.to_string(),
    }
}

/// The CEL name of a numeric type.
fn type_name(ty: &Ty<'_>) -> &'static str {
    match ty {
        Ty::Int => "int",
        Ty::Uint => "uint",
        Ty::Double => "double",
        other => other.describe(),
    }
}
