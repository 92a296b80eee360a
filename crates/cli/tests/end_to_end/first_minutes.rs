//! The first five minutes of a new user, through the real binary: a model endpoint that
//! has no model list, a server added to a fresh project and asked, and an installed copy
//! of the two binaries that still finds its servers.

use crate::common::*;
use crate::fake_model::{self, Models};

#[test]
fn an_endpoint_without_a_model_list_is_not_refused_at_start() {
    for models in [
        Models::Status(405),
        Models::Status(501),
        Models::List(vec!["m"]),
    ] {
        let status = match &models {
            Models::Status(code) => *code,
            Models::List(_) => 200,
        };
        let endpoint = fake_model::start(models, "Hello from the model.");
        let ran = run(
            &["ask", "Say hello", "--model", "openai:m", "--json"],
            &[("OPENAI_BASE_URL", &endpoint.base), ("OPENAI_API_KEY", "")],
        );
        assert_eq!(ran.status, 0, "{status}: {}", ran.stderr);
        assert_eq!(ran.answer(), "Hello from the model.");
    }
    // An endpoint that fails its list for another reason is still reported at once.
    let endpoint = fake_model::start(Models::Status(500), "unused");
    let ran = run(
        &["ask", "Say hello", "--model", "openai:m"],
        &[("OPENAI_BASE_URL", &endpoint.base), ("OPENAI_API_KEY", "")],
    );
    assert_eq!(ran.status, 2, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("answered GET /models with 500"),
        "{}",
        ran.stderr
    );
}
