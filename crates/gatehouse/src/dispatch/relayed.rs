//! One round of a call whose questions someone else answers: a gateway relays a server's
//! `input_required` to its caller's client and sends the answers back in the next round,
//! never answering itself. The host's own calls answer through [`super::call_tool`].

use std::time::Instant;

use rmcp::model::{
    ClientRequest, CreateTaskResult, InputRequest, InputRequiredResult, InputResponses,
    ServerResult,
};
use tokio_util::sync::CancellationToken;

use super::{
    Asked, Call, CallEnd, CallLimits, Dispatched, Relay, Round, Round1, failed, next_round, task,
};
use crate::connect::Connection;
use crate::{person, trace::Trace};

/// Whether a server's `input_required` round asks the person anything (a form or a URL).
pub fn asks_the_person(asked: &InputRequiredResult) -> bool {
    asked
        .input_requests
        .iter()
        .flatten()
        .any(|(_, r)| matches!(r, InputRequest::Elicitation(_)))
}

/// The answers a caller's client gave to a server's questions, with the server's state,
/// for the round that follows them.
#[derive(Debug, Clone)]
pub struct Answered {
    /// The answers, by the keys the server asked under.
    pub responses: InputResponses,
    /// The server's `requestState`, byte for byte.
    pub state: Option<String>,
}

/// How one relayed round ended: the call's end, or the server's questions for the caller.
#[derive(Debug)]
pub enum Relayed {
    /// The call ended.
    Ended(Dispatched),
    /// The server asks: the caller's client answers, and the next round carries it.
    Asks(InputRequiredResult),
    /// The server runs the call as a task, handed back to a caller that takes tasks
    /// itself ([`super::Relay::tasks_to_caller`]).
    Task(Box<CreateTaskResult>),
}

/// Send one round of a call whose questions someone else answers (a gateway relays them
/// to its caller's client, never answering itself): the call's end, or the server's
/// questions. `answered` carries the answers to the questions of the round before.
pub async fn call_tool_round(
    call: Call<'_>,
    answered: Option<Answered>,
    limits: CallLimits,
    trace: &Trace,
    stop: &CancellationToken,
) -> Relayed {
    let start = Instant::now();
    let conn = call.conn;
    let (round, mut params) = call.first_round(limits, trace, stop);
    if let Some(a) = answered {
        params = next_round(params, a.responses, a.state);
    }
    match round.call_round(&params, &mut 0).await {
        Asked::Asks(asked) => Relayed::Asks(asked),
        Asked::Ended(end) => Relayed::Ended(Dispatched {
            end,
            asked_user: conn.handler().take_asked(),
            rounds: 1,
            elapsed: start.elapsed(),
            task: None,
        }),
        Asked::Task(created) if round.relay.is_some_and(|r| r.tasks_to_caller) => {
            Relayed::Task(created)
        }
        // Otherwise a task is followed here, for at most the call's task wait. Its questions
        // have no round to reach the caller's client through: they go to the person the
        // caller brought (an older client, asked inside its call), else nobody answers
        // them and each is declined.
        Asked::Task(created) => {
            let nobody = &person::Unattended::NOBODY;
            let follow = task::Follow {
                round: &round,
                person: round
                    .relay
                    .and_then(|r| r.person.as_deref())
                    .unwrap_or(nobody),
                meta: params.meta.clone(),
                resumed: false,
            };
            let followed = follow.run(*created).await;
            Relayed::Ended(Dispatched {
                end: followed.end,
                asked_user: followed.asked_user,
                rounds: 1,
                elapsed: start.elapsed(),
                task: followed.seen,
            })
        }
    }
}

/// Send one request about a task (`tasks/get`, `tasks/update`, `tasks/cancel`) to the
/// server that runs it, for a gateway's caller: declared as the call's requests are
/// (`relay`), within one round's time limit, its answer or why there is none.
pub async fn task_request(
    conn: &Connection,
    request: ClientRequest,
    limits: CallLimits,
    relay: &Relay,
    trace: &Trace,
    stop: &CancellationToken,
) -> Result<ServerResult, CallEnd> {
    let round = Round1 {
        conn,
        label: "tasks",
        limits,
        trace,
        stop,
        relay: Some(relay),
    };
    match round.send(request, &mut 0).await {
        Round::Answered(answer) => failed(conn, answer),
        Round::TimedOut(after) => Err(CallEnd::TimedOut(after)),
        Round::Stopped => Err(CallEnd::Stopped),
    }
}
