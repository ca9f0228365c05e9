//! A realistic todo app: nested fields, a tagged filter, an async save effect that feeds back a
//! `saved` message (so `waitFor: drained` matters), route-gated and agent-only actions,
//! confirmations on destructive actions, and a redacted secret.

use std::future::Future;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tea_agent_runtime::app::{App, Bindings, EffectError, OutlineNode, Region, VisibleContent};
use tea_agent_runtime::app::{EffectContext, Progress};
use tea_agent_runtime::{AgentContext, AgentDocs, AgentMsg, TrackedVec};

/// How urgent a todo is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// Whenever.
    Low,
    /// Soon.
    Normal,
    /// Now.
    High,
}

/// Optional details of a todo.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Details {
    /// Free-form notes.
    pub notes: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
}

/// One todo.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Todo {
    /// Stable id (`t1`, `t2`, …).
    pub id: String,
    /// What to do.
    pub title: String,
    /// Done or not.
    pub done: bool,
    /// Urgency.
    pub priority: Priority,
    /// Extra details.
    pub details: Details,
}

/// Which todos the list shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Filter {
    /// Everything.
    All,
    /// Not done yet.
    Active,
    /// Done.
    Completed,
    /// Todos carrying a tag.
    Tagged {
        /// The tag.
        tag: String,
    },
}

/// Save status of the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SaveStatus {
    /// Nothing unsaved.
    Saved,
    /// A save is running.
    Saving,
    /// Changes since the last save.
    Dirty,
}

/// The todo app's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// The todos, in order.
    // A `TrackedVec`: a commit that changes one todo walks only its chunk of the list.
    pub todos: TrackedVec<Todo>,
    /// The current filter.
    pub filter: Filter,
    /// Save status.
    pub save: SaveStatus,
    /// How many saves completed.
    pub saves: u32,
    /// Next id number.
    pub next_id: u32,
    /// A secret that agents must never see.
    /// @redact
    pub api_key: String,
}

/// A todo as the agent adds it in bulk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewTodo {
    /// What to do.
    pub title: String,
    /// Urgency (normal when absent).
    pub priority: Option<Priority>,
}

/// The todo app's messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Msg {
    /// @intent("add a todo") @example({"type":"add","title":"buy milk","priority":"normal"})
    Add {
        /// @should("a short imperative title") @validates("size(v) > 0 && size(v) <= 200")
        title: String,
        /// @should("how urgent it is")
        priority: Option<Priority>,
    },
    /// @intent("mark a todo done or not done")
    Toggle {
        /// The todo's id.
        id: String,
    },
    /// @intent("rename a todo")
    Rename {
        /// The todo's id.
        id: String,
        /// @validates("size(v) > 0")
        title: String,
    },
    /// @intent("delete a todo") @requiresConfirm @warning("the todo is gone for good")
    Delete {
        /// The todo's id.
        id: String,
    },
    /// @intent("show only some todos") @alwaysAffordable
    SetFilter {
        /// The filter.
        filter: Filter,
    },
    /// @intent("delete every completed todo") @requiresConfirm
    /// @routeGated("state.todos.exists(t, t.done)", "no todo is completed yet")
    ClearCompleted,
    /// @intent("add several todos at once") @agentOnly @emits("todo/save")
    BulkAdd {
        /// @should("one entry per todo")
        todos: Vec<NewTodo>,
    },
    /// @intent("mark every todo done") @agentOnly
    /// @routeGated("state.todos.exists(t, !t.done)", "every todo is done already")
    CompleteAll,
    /// @intent("save the list") @emits("todo/save")
    Save,
    /// Sent by the save effect when it finishes.
    /// @humanOnly
    Saved,
    /// @humanOnly @intent("rotate the API key")
    RotateKey,
    /// @intent("import todos") @emits("todo/import")
    /// @example({"type":"import","count":50})
    Import {
        /// @should("how many todos to import; they arrive 10 at a time, about 100 ms apart")
        /// @validates("v > 0 && v <= 1000")
        count: u32,
    },
    /// Sent by the import effect for each batch it brings in.
    /// @humanOnly
    Imported {
        /// The titles of the batch.
        titles: Vec<String>,
    },
}

/// The todo app's effects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Effect {
    /// Persists the list (simulated with a delay), then sends `saved`.
    #[serde(rename = "todo/save")]
    Save {
        /// How many todos are saved.
        count: usize,
    },
    /// Imports `count` todos in batches of 10, one batch per `import_step`, reporting its
    /// progress and stopping when cancelled.
    #[serde(rename = "todo/import")]
    Import {
        /// How many todos to import.
        count: u32,
    },
}

/// The todo app; `save_delay` simulates the storage round-trip, `import_step` the time one
/// batch of an import takes.
#[derive(Debug, Clone, Copy)]
pub struct TodoApp {
    /// How long a save takes.
    pub save_delay: Duration,
    /// How long an import takes per batch of 10 todos (default 100 ms).
    pub import_step: Duration,
}

impl Default for TodoApp {
    fn default() -> Self {
        TodoApp {
            save_delay: Duration::from_millis(50),
            import_step: Duration::from_millis(100),
        }
    }
}

/// How many todos one batch of an import brings in.
pub const IMPORT_BATCH: u32 = 10;

/// The import effect: `count` todos, a batch per `step`, its progress reported after each
/// batch; it stops at the next batch once cancelled.
async fn import(count: u32, step: Duration, ctx: EffectContext<Msg>) -> Result<(), EffectError> {
    let mut done = 0;
    ctx.progress(Progress::steps(0, u64::from(count)).with_text("starting the import"));
    while done < count {
        tokio::select! {
            () = ctx.cancelled() => return Ok(()),
            () = tokio::time::sleep(step) => {}
        }
        let batch = IMPORT_BATCH.min(count - done);
        let titles = (done + 1..=done + batch)
            .map(|n| format!("imported todo {n}"))
            .collect();
        ctx.dispatch(Msg::Imported { titles })?;
        done += batch;
        ctx.progress(
            Progress::steps(u64::from(done), u64::from(count))
                .with_text(format!("imported {done} of {count}")),
        );
    }
    Ok(())
}

impl TodoApp {
    fn mark_dirty_and_save(state: &mut State) -> Vec<Effect> {
        state.save = SaveStatus::Saving;
        vec![Effect::Save {
            count: state.todos.len(),
        }]
    }

    fn push(state: &mut State, title: String, priority: Option<Priority>) {
        state.next_id += 1;
        state.todos.push(Todo {
            id: format!("t{}", state.next_id),
            title,
            done: false,
            priority: priority.unwrap_or(Priority::Normal),
            details: Details {
                notes: None,
                tags: Vec::new(),
            },
        });
    }

    fn visible(state: &State) -> impl Iterator<Item = &Todo> {
        state.todos.iter().filter(|t| match &state.filter {
            Filter::All => true,
            Filter::Active => !t.done,
            Filter::Completed => t.done,
            Filter::Tagged { tag } => t.details.tags.contains(tag),
        })
    }
}

impl App for TodoApp {
    type State = State;
    type Msg = Msg;
    type Effect = Effect;

    fn name(&self) -> &str {
        "todo"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn init(&self) -> (State, Vec<Effect>) {
        let mut state = State {
            todos: TrackedVec::new(),
            filter: Filter::All,
            save: SaveStatus::Saved,
            saves: 0,
            next_id: 0,
            api_key: "sk-demo-secret".into(),
        };
        Self::push(
            &mut state,
            "try the agent console".into(),
            Some(Priority::High),
        );
        Self::push(&mut state, "connect Claude".into(), None);
        (state, Vec::new())
    }

    fn update(&self, state: &mut State, msg: Msg) -> Vec<Effect> {
        match msg {
            Msg::Add { title, priority } => {
                Self::push(state, title, priority);
                state.save = SaveStatus::Dirty;
            }
            Msg::Toggle { id } => {
                if let Some(t) = state.todos.find_mut(|t| t.id == id) {
                    t.done = !t.done;
                    state.save = SaveStatus::Dirty;
                }
            }
            Msg::Rename { id, title } => {
                if let Some(t) = state.todos.find_mut(|t| t.id == id) {
                    t.title = title;
                    state.save = SaveStatus::Dirty;
                }
            }
            Msg::Delete { id } => {
                state.todos.retain(|t| t.id != id);
                return Self::mark_dirty_and_save(state);
            }
            Msg::SetFilter { filter } => state.filter = filter,
            Msg::ClearCompleted => {
                state.todos.retain(|t| !t.done);
                return Self::mark_dirty_and_save(state);
            }
            Msg::BulkAdd { todos } => {
                for t in todos {
                    Self::push(state, t.title, t.priority);
                }
                return Self::mark_dirty_and_save(state);
            }
            Msg::CompleteAll => {
                state.todos.iter_mut().for_each(|t| t.done = true);
                state.save = SaveStatus::Dirty;
            }
            Msg::Save => return Self::mark_dirty_and_save(state),
            Msg::Saved => {
                state.save = SaveStatus::Saved;
                state.saves += 1;
            }
            Msg::RotateKey => state.api_key = format!("sk-rotated-{}", state.saves),
            Msg::Import { count } => return vec![Effect::Import { count }],
            Msg::Imported { titles } => {
                for title in titles {
                    Self::push(state, title, None);
                }
                state.save = SaveStatus::Dirty;
            }
        }
        Vec::new()
    }

    fn run_effect(
        &self,
        effect: Effect,
        ctx: EffectContext<Msg>,
    ) -> impl Future<Output = Result<(), EffectError>> + Send + 'static {
        let delay = self.save_delay;
        let step = self.import_step;
        async move {
            match effect {
                Effect::Save { .. } => {
                    tokio::time::sleep(delay).await;
                    ctx.dispatch(Msg::Saved)?;
                    Ok(())
                }
                Effect::Import { count } => import(count, step, ctx).await,
            }
        }
    }

    fn docs(&self) -> Option<AgentDocs> {
        Some(AgentDocs {
            purpose: "A todo list the agent can organise together with the user.".into(),
            overview: Some(
                "Todos have an id (t1, t2, …), a title, a done flag, a priority and details. Changes are saved by an async effect; use waitFor \"drained\" to see the save finish."
                    .into(),
            ),
            cautions: Some(vec![
                "delete and clearCompleted need the user's confirmation".into(),
            ]),
            examples: Some(vec![
                r#"{"type":"add","title":"water the plants"}"#.into(),
                r#"{"type":"bulkAdd","todos":[{"title":"a"},{"title":"b","priority":"high"}]}"#.into(),
            ]),
        })
    }

    fn context(&self, state: &State) -> Option<AgentContext> {
        let open = state.todos.iter().filter(|t| !t.done).count();
        let mut cautions = Vec::new();
        if state.save != SaveStatus::Saved {
            cautions.push("there are unsaved changes".into());
        }
        Some(AgentContext {
            summary: format!("{} todos, {open} open", state.todos.len()),
            hints: vec!["ids are shown in the state; toggle/rename/delete take an id".into()],
            cautions,
        })
    }

    fn bindings(&self, state: &State) -> Bindings<MsgKind> {
        let mut b = vec![
            MsgKind::Add,
            MsgKind::SetFilter,
            MsgKind::Save,
            MsgKind::RotateKey,
            MsgKind::Import,
        ];
        if !state.todos.is_empty() {
            b.extend([MsgKind::Toggle, MsgKind::Rename, MsgKind::Delete]);
        }
        if state.todos.iter().any(|t| t.done) {
            b.push(MsgKind::ClearCompleted);
        }
        b.into()
    }

    fn outline(&self, state: &State) -> Option<VisibleContent> {
        let items = Self::visible(state)
            .map(|t| OutlineNode::Item {
                text: format!(
                    "[{}] {} ({})",
                    if t.done { "x" } else { " " },
                    t.title,
                    t.id
                ),
                children: Vec::new(),
            })
            .collect();
        Some(VisibleContent {
            url: Some("/todos".into()),
            outline: vec![
                OutlineNode::Heading {
                    level: 1,
                    text: "Todos".into(),
                },
                OutlineNode::List { items },
                OutlineNode::Button {
                    text: "Clear completed".into(),
                    disabled: !state.todos.iter().any(|t| t.done),
                    action_variant: Some("clearCompleted".into()),
                },
            ],
        })
    }

    fn regions(&self, state: &State) -> Vec<Region> {
        Self::visible(state)
            .map(|t| Region {
                name: "todo".into(),
                text: t.title.clone(),
                attrs: [("id".to_string(), t.id.clone())].into_iter().collect(),
            })
            .collect()
    }
}
