//! The person's Stop: a handle that cancels the call in flight, whichever it is.

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

/// Stops the call in flight, if any: its request is cancelled on the server. Cheap to
/// clone and to hand to a signal handler.
#[derive(Clone, Default)]
pub struct Stopper {
    current: Arc<Mutex<Option<CancellationToken>>>,
}

impl Stopper {
    /// Stop the call in flight. Returns whether there was one.
    pub fn stop(&self) -> bool {
        match self
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// A token for a call that starts now; it is cleared by [`Stopper::finish`].
    pub fn begin(&self) -> CancellationToken {
        let token = CancellationToken::new();
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(token.clone());
        token
    }

    /// The call in flight ended; a Stop now stops nothing.
    pub fn finish(&self) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}
