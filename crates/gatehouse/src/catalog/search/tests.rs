//! The search's own cases: what a request finds in a small catalog, exact names, hostile
//! requests, bounds, look-alikes and a server's share.

use super::*;
use crate::catalog::Catalog;
use crate::config::name::server_name;
use serde_json::json;

fn tool(name: &str, description: &str, params: Value) -> rmcp::model::Tool {
    serde_json::from_value(json!({"name": name, "description": description,
        "inputSchema": {"type": "object", "properties": params}}))
    .unwrap()
}

/// Tools about other things, as a real catalog has many: bm25 weighs a word by how
/// few tools have it.
fn others() -> Vec<rmcp::model::Tool> {
    [
        "weather", "music", "invoice", "flight", "calendar", "photo", "payment", "song", "recipe",
        "alarm",
    ]
    .iter()
    .map(|w| {
        tool(
            &format!("get_{w}"),
            &format!("Get the {w} of the day."),
            json!({}),
        )
    })
    .collect()
}

fn index() -> (Catalog, ToolIndex) {
    let catalog = Catalog::build(vec![
        (server_name("misc"), others()),
        (
            server_name("github"),
            vec![
                tool(
                    "create_issue",
                    "Create a new issue in a GitHub repository",
                    json!({"title": {"type": "string"}}),
                ),
                tool(
                    "get_file_contents",
                    "Get the contents of a file or directory from a GitHub repository",
                    json!({"path": {"type": "string", "description": "Path to the file"}}),
                ),
                tool(
                    "update_issue",
                    "Update an existing issue",
                    json!({"state": {"type": "string", "enum": ["open", "closed"]}}),
                ),
            ],
        ),
        (
            server_name("jira"),
            vec![tool(
                "create_issue",
                "Create a new issue in Jira.",
                json!({}),
            )],
        ),
        (
            server_name("filesystem"),
            vec![
                tool(
                    "read_text_file",
                    "Read the complete contents of a file from the file system as text.",
                    json!({"path": {"type": "string"}}),
                ),
                tool(
                    "list_directory",
                    "Get a detailed listing of all files and directories in a specified path.",
                    json!({}),
                ),
            ],
        ),
    ]);
    let index = ToolIndex::build(catalog.tools()).unwrap();
    (catalog, index)
}

fn names(found: Vec<Found>) -> Vec<String> {
    found.into_iter().map(|f| f.name).collect()
}

#[test]
fn a_request_finds_the_tool_of_the_server_it_names() {
    let (_, index) = index();
    for (request, tool) in [
        ("a new issue on github", "github__create_issue"),
        ("file a jira issue", "jira__create_issue"),
        // Word shapes: ~/projects is a directory, notes.txt a file.
        ("what's in ~/projects", "filesystem__list_directory"),
        ("read notes.txt", "filesystem__read_text_file"),
        // A parameter's values: closing an issue is updating its state.
        ("close github issue 5", "github__update_issue"),
    ] {
        assert_eq!(names(index.search(request, 1)), [tool], "{request}");
    }
    let all = index.search("issue", 20);
    assert_eq!(all.len(), 3, "only matching tools: {all:?}");
    assert!(index.search("zebra", 20).is_empty());
    assert!(all.windows(2).all(|w| w[0].score >= w[1].score));
}

#[test]
fn a_tool_named_exactly_comes_first() {
    let (_, index) = index();
    let found = names(index.search("use jira__create_issue for the directory listing", 2));
    assert_eq!(found[0], "jira__create_issue");
    let found = names(index.search("list_directory", 1));
    assert_eq!(found, ["filesystem__list_directory"]);
}

#[test]
fn hostile_requests_are_words_and_nothing_else() {
    let (_, index) = index();
    for request in [
        "",
        "   ",
        "\"",
        "* OR NEAR(a b)",
        "issue\" OR \"x",
        "-issue",
        "^issue",
        "{name}: issue",
        "issue AND NOT jira",
        "\u{202e}issue\u{0}",
        &"issue ".repeat(10_000),
        &"é".repeat(100_000),
    ] {
        let found = index.search(request, 50);
        assert!(found.len() <= MAX_SEARCH_LIMIT, "{request:.40}");
    }
    assert!(index.search("", 5).is_empty());
    assert!(
        !index.search("issue\" OR \"x", 5).is_empty(),
        "its words still count"
    );
}

#[test]
fn a_huge_description_is_indexed_to_its_bound() {
    let big = format!("alpha {} omega", "filler ".repeat(100_000));
    let catalog = Catalog::build(vec![(server_name("s"), vec![tool("t", &big, json!({}))])]);
    let index = ToolIndex::build(catalog.tools()).unwrap();
    assert_eq!(index.len(), 1);
    assert_eq!(names(index.search("alpha", 5)), ["s__t"]);
    assert!(index.search("omega", 5).is_empty(), "past MAX_FIELD_CHARS");
}

#[test]
fn repeating_a_word_or_listing_many_buys_no_rank() {
    let catalog = Catalog::build(vec![
        (server_name("misc"), others()),
        (
            server_name("real"),
            vec![tool(
                "send_invoice",
                "Send an invoice to a customer.",
                json!({}),
            )],
        ),
        (
            server_name("loud"),
            vec![
                tool("helper", &"send invoice ".repeat(200), json!({})),
                tool("send_invoice_send_invoice_send_invoice", "Send.", json!({})),
            ],
        ),
        (
            server_name("broad"),
            vec![tool(
                "helper",
                "send invoice create list get search read write fetch update delete open run find add move take click fill reply issue message channel file folder",
                json!({}),
            )],
        ),
    ]);
    let index = ToolIndex::build(catalog.tools()).unwrap();
    let found = names(index.search("send an invoice", 5));
    assert_eq!(found[0], "real__send_invoice", "{found:?}");
    assert!(!found.contains(&"broad__helper".to_owned()), "{found:?}");
}

#[test]
fn a_look_alike_never_comes_before_the_tool_it_copies() {
    let github = tool(
        "create_issue",
        "Create a new issue in a GitHub repository",
        json!({}),
    );
    // `aa` sorts first, and its copy is word for word GitHub's.
    let catalog = Catalog::build(vec![
        (server_name("aa"), vec![github.clone()]),
        (server_name("github"), vec![github]),
        (server_name("misc"), others()),
    ]);
    let index = ToolIndex::build(catalog.tools()).unwrap();
    for request in ["create an issue in a repository", "create_issue"] {
        let found = names(index.search(request, 5));
        assert_eq!(
            found[..2],
            ["github__create_issue", "aa__create_issue"],
            "{request}"
        );
    }
    // What the request names wins: the full name, or the server.
    for request in ["aa__create_issue", "create_issue on aa", "an issue on aa"] {
        assert_eq!(
            names(index.search(request, 5))[0],
            "aa__create_issue",
            "{request}"
        );
    }
    assert!(pick::names(&words::split("on GitHub"), "github"));
    assert!(pick::names(&words::split("google maps"), "googlemaps"));
    assert!(!pick::names(&words::split("an aardvark"), "aa"));
}

/// `n` tools about invoices on `server`.
fn invoice_tools(n: usize) -> Vec<rmcp::model::Tool> {
    (0..n)
        .map(|i| tool(&format!("invoice_{i}"), "Work with an invoice.", json!({})))
        .collect()
}

#[test]
fn one_server_fills_at_most_its_share_while_others_match() {
    let catalog = Catalog::build(vec![
        (server_name("many"), invoice_tools(6)),
        (
            server_name("few"),
            vec![tool(
                "list_invoices",
                "List the invoices of a month.",
                json!({}),
            )],
        ),
    ]);
    let index = ToolIndex::build(catalog.tools()).unwrap();
    let found = names(index.search("invoice", 5));
    assert_eq!(server_share(5), 2);
    assert_eq!(
        found.len(),
        5,
        "the rest filled when too few others match: {found:?}"
    );
    let first_three: Vec<&String> = found.iter().take(3).collect();
    assert!(
        first_three.contains(&&"few__list_invoices".to_owned()),
        "{found:?}"
    );
    // A request that names the server asks for its tools.
    let named = names(index.search("invoice on many", 5));
    assert!(
        named.iter().take(4).all(|n| n.starts_with("many__")),
        "{named:?}"
    );
    // A catalog of one server finds as many as asked.
    let one = Catalog::build(vec![(server_name("many"), invoice_tools(6))]);
    let index = ToolIndex::build(one.tools()).unwrap();
    assert_eq!(index.search("invoice", 5).len(), 5);
}

/// A support desk's tools beside an incident tracker's, as the README's question meets
/// them.
fn desk() -> Catalog {
    Catalog::build(vec![
        (server_name("misc"), others()),
        (
            server_name("support"),
            vec![
                tool(
                    "get_ticket",
                    "Get one support ticket of this organization by its ID (for example T-30002).",
                    json!({"ticket_id": {"type": "string", "description": "A ticket ID."}}),
                ),
                tool(
                    "search_knowledge",
                    "Search this organization's policy documents.",
                    json!({"query": {"type": "string", "description": "Words to look for."}}),
                ),
            ],
        ),
        (
            server_name("tickets"),
            vec![
                tool(
                    "list_tickets",
                    "List the incident tickets opened so far.",
                    json!({"host": {"type": "string"}}),
                ),
                tool(
                    "open_ticket",
                    "Open an incident ticket about a host.",
                    json!({"host": {"type": "string"}}),
                ),
            ],
        ),
    ])
}

#[test]
fn a_tool_not_shown_takes_no_place_and_is_not_the_best_fit() {
    let catalog = desk();
    let index = ToolIndex::build(catalog.tools()).unwrap();
    let hidden = "support__get_ticket";
    let shown = |name: &str| name != hidden;
    let request = "get support ticket T-30002 by its ID";
    // Shown, it fits so much better that the incident tickets fall under the floor.
    let all = names(index.search(request, 5));
    assert_eq!(all[0], hidden, "{all:?}");
    assert!(
        !all.contains(&"tickets__list_tickets".to_owned()),
        "{all:?}"
    );
    // Left out, it is not what the others are measured against.
    let found = names(index.search_where(request, 5, &shown));
    assert!(
        found.contains(&"tickets__list_tickets".to_owned()),
        "{found:?}"
    );
    // Never returned, named exactly or not, and the places it would take are others'.
    for request in [request, hidden, "get_ticket", "support get_ticket"] {
        let found = names(index.search_where(request, 20, &shown));
        assert!(!found.contains(&hidden.to_owned()), "{request}: {found:?}");
    }
    let limited = names(index.search_where("ticket", 2, &shown));
    assert_eq!(limited.len(), 2, "{limited:?}");
    // What is shown ranks as in a catalog without the hidden tool.
    let without = Catalog::build(vec![(
        server_name("tickets"),
        vec![catalog.get("tickets__list_tickets").unwrap().tool.clone()],
    )]);
    let index = ToolIndex::build(without.tools()).unwrap();
    assert_eq!(names(index.search("ticket", 5)), ["tickets__list_tickets"]);
}

/// The reference servers' own definitions (`crates/servers/tools/SERVER.TOOL.json`) beside
/// every pinned real server: the catalog the README's question is searched in.
fn reference_and_pinned() -> Catalog {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../servers/tools");
    let mut servers: std::collections::BTreeMap<String, Vec<rmcp::model::Tool>> =
        Default::default();
    for file in std::fs::read_dir(&dir).unwrap() {
        let path = file.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let (server, _) = name.split_once('.').unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        servers
            .entry(server.to_owned())
            .or_default()
            .push(serde_json::from_str(&text).unwrap());
    }
    assert_eq!(servers.len(), 4, "support, cmdb, tickets, orders");
    let mut listings: Vec<_> = servers
        .into_iter()
        .map(|(server, tools)| (server_name(&server), tools))
        .collect();
    listings.extend(super::stuffing::pinned(&[]));
    Catalog::build(listings)
}

#[test]
fn naming_a_server_lifts_its_share_only_for_its_tools_that_fit_the_rest() {
    let index = ToolIndex::build(reference_and_pinned().tools()).unwrap();
    assert_eq!(server_share(3), 1);
    // The scripted model's first search for the README's question: "a support ticket"
    // names the server `support`, whose knowledge base matches little else of it, so the
    // incident tracker's tickets come before it.
    let found = names(index.search("look up a support ticket by its id", 3));
    assert_eq!(found[0], "support__get_ticket", "{found:?}");
    assert!(
        !found.contains(&"support__search_knowledge".to_owned()),
        "{found:?}"
    );
    // A named server's tools that fit the rest of the request are all its to show.
    let found = names(index.search("list incident tickets", 3));
    assert_eq!(
        found[..2],
        ["tickets__list_tickets", "tickets__open_ticket"],
        "{found:?}"
    );
}

/// The answer of a search of everything.
fn answer_of(index: &ToolIndex, request: &str) -> Answer {
    index.answer(request, 5, &|_| true)
}

#[test]
fn a_request_the_tools_cover_is_answered_with_them() {
    let (_, index) = index();
    let Answer::Found(found) = answer_of(&index, "create an issue in jira") else {
        panic!("a request the tools cover is answered with tools");
    };
    assert_eq!(found[0].name, "jira__create_issue");
    assert!(index.coverage("create an issue in jira") > 0.9);
}

#[test]
fn a_request_no_tool_does_is_told_so_with_the_servers_that_come_closest() {
    let (_, index) = index();
    // Only "get" is a word of the tools, and it is a word of nearly all of them.
    let request = "get sourdough starter flour and rye for baking loaves";
    let coverage = index.coverage(request);
    let (_, closeness) = index.best_fit(request);
    assert!(
        !answer::fits_well(coverage, closeness),
        "{coverage} {closeness}"
    );
    let Answer::NothingGood {
        coverage: told,
        closest,
    } = answer_of(&index, request)
    else {
        panic!("nothing fits: the search says so");
    };
    assert_eq!(told, coverage);
    let servers: Vec<&str> = closest.iter().map(|c| c.server.as_str()).collect();
    assert!(!servers.is_empty() && servers.len() <= answer::MAX_CLOSEST_SERVERS);
    assert!(servers.contains(&"misc"), "{closest:?}");
    for c in &closest {
        assert!(!c.tools.is_empty() && c.tools.len() <= answer::MAX_CLOSEST_TOOLS);
        assert!(
            c.tools
                .iter()
                .all(|t| t.starts_with(&format!("{}__", c.server)))
        );
    }
    // A request of no word any tool holds: nothing close either.
    let Answer::NothingGood { closest, .. } = answer_of(&index, "sourdough rye loaves") else {
        panic!("nothing fits");
    };
    assert!(closest.is_empty());
    // Nor does an empty one find anything.
    assert!(matches!(answer_of(&index, ""), Answer::NothingGood { .. }));
}

#[test]
fn a_hidden_tool_is_no_closest_server_of_a_request_nothing_fits() {
    let (_, index) = index();
    let request = "get sourdough starter flour and rye for baking loaves";
    let answer = index.answer(request, 5, &|name| !name.starts_with("misc__"));
    let Answer::NothingGood { closest, .. } = answer else {
        panic!("nothing fits: {answer:?}");
    };
    assert!(closest.iter().all(|c| c.server != "misc"), "{closest:?}");
}

#[test]
fn a_one_word_tool_name_is_a_word_of_the_request_not_its_name() {
    let catalog = Catalog::build(vec![
        (server_name("misc"), others()),
        (
            server_name("drive"),
            vec![tool("search", "Search for files in the drive.", json!({}))],
        ),
        (
            server_name("github"),
            vec![tool(
                "search_issues",
                "Search for issues across GitHub repositories.",
                json!({}),
            )],
        ),
    ]);
    let index = ToolIndex::build(catalog.tools()).unwrap();
    // "search" is the drive's tool's whole name, and a word of every search request.
    let found = names(index.search("search issues mentioning timeout on github", 2));
    assert_eq!(found[0], "github__search_issues", "{found:?}");
    // Its catalog name still names it, and an identifier of several words names its tool.
    assert_eq!(
        names(index.search("issues drive__search", 1)),
        ["drive__search"]
    );
    assert_eq!(
        names(index.search("files search_issues", 1)),
        ["github__search_issues"]
    );
}

#[test]
fn a_word_finds_the_longer_words_it_begins() {
    let catalog = Catalog::build(vec![
        (server_name("misc"), others()),
        (
            server_name("github"),
            vec![tool(
                "fork_repository",
                "Fork a repository to your account.",
                json!({}),
            )],
        ),
    ]);
    let index = ToolIndex::build(catalog.tools()).unwrap();
    assert_eq!(
        names(index.search("copy that repo", 1)),
        ["github__fork_repository"]
    );
    let words = Method {
        meaning: false,
        ..Method::default()
    };
    let exact = Method {
        prefixes: false,
        ..words
    };
    assert!(index.search_by("copy that repo", 1, exact).is_empty());
    // Three letters begin too many words: "rep" finds nothing.
    assert!(index.search_by("copy that rep", 1, words).is_empty());
    // What the words miss, the meaning finds: to copy a repository is to fork it.
    assert_eq!(
        names(index.search_by(
            "copy that repo",
            1,
            Method {
                prefixes: false,
                ..Method::default()
            }
        )),
        ["github__fork_repository"]
    );
}

proptest::proptest! {
    #[test]
    fn coverage_is_a_share_for_any_request(request in "\\PC{0,80}") {
        let (_, index) = index();
        let coverage = index.coverage(&request);
        proptest::prop_assert!((0.0..=1.0).contains(&coverage), "{}", coverage);
        let _ = index.answer(&request, 5, &|_| true);
    }
}

#[test]
fn a_named_servers_tool_the_meaning_ranks_is_asked_for_past_its_share() {
    let index = ToolIndex::build(reference_and_pinned().tools()).unwrap();
    // "errors" is not a word of Sentry's issue search, whose description speaks of issues
    // and their impact; read by words alone, the request asked only for the tools that
    // hold its words, and the share held the search back for others' tools that match
    // "checkout".
    let found = names(index.search("in sentry, which errors hit checkout today", 5));
    assert!(
        found.contains(&"sentry__search_issues".to_owned()),
        "{found:?}"
    );
}

#[test]
fn a_request_of_values_no_tool_holds_is_answered_when_a_tool_means_it() {
    let index = ToolIndex::build(reference_and_pinned().tools()).unwrap();
    // Five channel names no tool holds leave the words little to cover; what is asked is
    // plain all the same.
    let request = "post a note in our chat channels ops91 ops92 ops93 ops94 ops95";
    let (coverage, closeness) = index.best_fit(request);
    assert!(coverage < answer::MIN_COVERAGE, "{coverage}");
    assert!(closeness >= answer::MIN_CLOSENESS, "{closeness}");
    let Answer::Found(found) = answer_of(&index, request) else {
        panic!("a tool that means the request answers it");
    };
    assert_eq!(found[0].name, "slack__slack_post_message", "{found:?}");
}

#[test]
fn a_tool_whose_meaning_stands_out_is_found_without_a_word_in_common() {
    let index = ToolIndex::build(reference_and_pinned().tools()).unwrap();
    // No word of the request is a word of the elevation tool ("Get elevation data for
    // locations on the earth"), and its closeness is under MIN_CLOSENESS; but of the
    // catalog's 240 tools it is the one that means it, by far.
    let request = "what altitude is the summit of Mont Blanc";
    let row = index
        .entries
        .iter()
        .position(|e| e.name == "google-maps__maps_elevation")
        .unwrap() as u32;
    let closeness = index.closeness_of(index.asked(request).as_deref(), row);
    assert!(closeness < meaning::MIN_CLOSENESS, "{closeness}");
    let found = names(index.search(request, 5));
    assert_eq!(found[0], "google-maps__maps_elevation", "{found:?}");
}
