//! [`test_app!`](crate::test_app): a test app in a few lines. The tests' apps run no effects;
//! the macro writes the `impl App` around a name, a version, the initial state and `update`.
//!
//! ```ignore
//! struct Fragile;
//! agent_tests::test_app! {
//!     Fragile { name: "fragile", version: "1", state: State = State::default(), msg: Msg }
//!     update(state, msg) => match msg { Msg::Inc => state.count += 1 };
//!     // Any other method of `App`, as in an `impl` block:
//!     fn docs(&self) -> Option<AgentDocs> { None }
//! }
//! ```
//!
//! With `effects: Call` after `msg`, `update` answers the effects (a `Vec<Call>`) and
//! `run_effect` does nothing with them; without, `update` answers nothing and the effect type
//! is `()`.

#[doc(hidden)]
pub mod __private {
    pub use tea_agent_runtime::app::EffectContext;
    pub use tea_agent_runtime::app::{App, EffectError};
}

/// Implements `tea_agent_runtime::app::App` for a test app: see [the module](crate::app).
#[macro_export]
macro_rules! test_app {
    (
        $app:ty { name: $name:expr, version: $version:expr, state: $state:ty = $init:expr,
                  msg: $msg:ty, effects: $effect:ty $(,)? }
        update($s:pat_param, $m:pat_param) => $update:expr;
        $($extra:item)*
    ) => {
        impl $crate::app::__private::App for $app {
            type State = $state;
            type Msg = $msg;
            type Effect = $effect;
            fn name(&self) -> &str {
                $name
            }
            fn version(&self) -> &str {
                $version
            }
            fn init(&self) -> ($state, Vec<$effect>) {
                ($init, Vec::new())
            }
            fn update(&self, $s: &mut $state, $m: $msg) -> Vec<$effect> {
                $update
            }
            fn run_effect(
                &self,
                _: $effect,
                _: $crate::app::__private::EffectContext<$msg>,
            ) -> impl ::std::future::Future<
                Output = ::std::result::Result<(), $crate::app::__private::EffectError>,
            > + Send
                   + 'static {
                ::std::future::ready(Ok(()))
            }
            $($extra)*
        }
    };
    (
        $app:ty { name: $name:expr, version: $version:expr, state: $state:ty = $init:expr,
                  msg: $msg:ty $(,)? }
        update($s:pat_param, $m:pat_param) => $update:expr;
        $($extra:item)*
    ) => {
        $crate::test_app! {
            $app { name: $name, version: $version, state: $state = $init, msg: $msg, effects: () }
            update($s, $m) => {
                $update;
                Vec::new()
            };
            $($extra)*
        }
    };
}
