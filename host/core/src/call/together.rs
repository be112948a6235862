//! The reads of one reply, run at the same time (as codex runs a reply's
//! parallel-safe calls): each call's gates in call order (a question to a
//! person is put one at a time, as ever), then the executors of those that
//! may run together at once — each a component instance of its own on a
//! runtime worker of its own — then each after stage and result in call
//! order. A call the gates turned into one that may not run together
//! (a hook's rewrite) runs on its own, in its place.

use super::run::Begun;
use super::{CallResult, Dispatch, Pending, Prepared};
use crate::llm::AssembledCall;
use crate::tools::Outcome;
use crate::turn::{Ctx, RunState, TaskError};

/// Where one call of the group stands.
enum Slot<'c> {
    /// Settled: its result.
    Done(CallResult),
    /// Ready to run with the others.
    Begun(Box<Begun<'c>>),
    /// Ran with the others: its outcome, for the after stage.
    Ran(Box<(Begun<'c>, Result<Outcome, TaskError>)>),
    /// To run on its own, in its place.
    Alone(Pending<'c>),
}

impl Dispatch<'_> {
    /// Run `calls` (consecutive calls of one reply whose tools say they may
    /// run together), returning their results in call order.
    pub async fn handle_together(
        &self,
        ctx: &Ctx<'_>,
        state: &mut RunState,
        calls: &[&AssembledCall],
    ) -> Result<Vec<CallResult>, TaskError> {
        // Each call's span covers the group it runs in.
        let mut spans: Vec<_> = calls.iter().map(|c| self.tool_span(ctx, c)).collect();
        let mut slots = Vec::with_capacity(calls.len());
        for call in calls {
            slots.push(match self.prepare(ctx, state, call).await? {
                Prepared::Done(r) => Slot::Done(r),
                Prepared::Ready(p) if p.tool.executor.concurrent(state, &p.args) => {
                    match self.begin(ctx, state, p).await {
                        Ok(b) => Slot::Begun(Box::new(b)),
                        Err(refused) => Slot::Done(refused),
                    }
                }
                Prepared::Ready(p) => Slot::Alone(p),
            });
        }
        let shared: &RunState = state;
        let slots = futures::future::join_all(slots.into_iter().map(|slot| async move {
            match slot {
                Slot::Begun(b) => {
                    let ran = self.execute_begun(ctx, shared, &b, true).await;
                    Slot::Ran(Box::new((*b, ran)))
                }
                other => other,
            }
        }))
        .await;
        let mut results = Vec::with_capacity(slots.len());
        for slot in slots {
            results.push(match slot {
                Slot::Done(r) => r,
                Slot::Ran(ran) => {
                    let (b, ran) = *ran;
                    self.end(ctx, state, b, ran).await?
                }
                Slot::Alone(p) => self.run(ctx, state, p).await?,
                // Every begun call ran above.
                Slot::Begun(b) => {
                    let ran = self.execute_begun(ctx, state, &b, false).await;
                    self.end(ctx, state, *b, ran).await?
                }
            });
        }
        for (span, r) in spans.iter_mut().zip(&results) {
            super::ended(span, r);
        }
        Ok(results)
    }
}
