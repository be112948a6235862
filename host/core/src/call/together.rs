//! The reads of one reply, run at the same time (as codex runs a reply's
//! parallel-safe calls): each call's gates in call order (a question to a
//! person is put one at a time, as ever), then the executors of those that
//! may run together at once — each a component instance of its own on a
//! runtime worker of its own — then each after stage and result in call
//! order. A call the gates turned into one that may not run together
//! (a hook's rewrite) runs on its own, in its place.

use opentelemetry::context::FutureExt as _;

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
        let mut observed: Vec<_> = calls.iter().map(|c| self.observe(ctx, state, c)).collect();
        let mut slots = Vec::with_capacity(calls.len());
        for (call, o) in calls.iter().zip(&observed) {
            let prepared = self
                .prepare(ctx, state, call)
                .with_context(o.context())
                .await?;
            slots.push(match prepared {
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
        let ran: Vec<bool> = slots.iter().map(|s| !matches!(s, Slot::Done(_))).collect();
        let shared: &RunState = state;
        let slots = futures::future::join_all(slots.into_iter().zip(&observed).map(|(slot, o)| {
            async move {
                match slot {
                    Slot::Begun(b) => {
                        let ran = self.execute_begun(ctx, shared, &b, true).await;
                        Slot::Ran(Box::new((*b, ran)))
                    }
                    other => other,
                }
            }
            .with_context(o.context())
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
        for ((o, r), ran) in observed.iter_mut().zip(&results).zip(ran) {
            o.ended(r, ran);
        }
        Ok(results)
    }
}
