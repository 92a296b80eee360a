use super::*;

#[test]
fn a_confirmation_is_bound_to_the_user_and_tenant_of_the_request() {
    let sam = TicketsServer::binding(&Caller::new("usr-sam", "larkfield", "test"), "h", "s");
    assert_eq!(
        sam,
        TicketsServer::binding(&Caller::new("usr-sam", "larkfield", "test"), "h", "s")
    );
    assert_ne!(
        sam,
        TicketsServer::binding(&Caller::new("usr-omar", "larkfield", "test"), "h", "s")
    );
    assert_ne!(
        sam,
        TicketsServer::binding(&Caller::new("usr-sam", "bramble", "test"), "h", "s")
    );
    // No name can imitate another user/tenant pair.
    assert_ne!(
        TicketsServer::binding(&Caller::new("a|b", "c", "test"), "h", "s"),
        TicketsServer::binding(&Caller::new("a", "b|c", "test"), "h", "s")
    );
}

#[test]
fn an_older_store_keeps_its_numbers_shows_its_tickets_to_no_one_and_refuses_its_used_confirmations()
{
    let dir = std::env::temp_dir().join(format!("gatehouse-tickets-old-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tickets.db");
    {
        let old = Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE tickets (
                 number INTEGER PRIMARY KEY, host TEXT NOT NULL, summary TEXT NOT NULL,
                 priority TEXT NOT NULL, status TEXT NOT NULL, opened_by TEXT NOT NULL,
                 opened_at TEXT NOT NULL);
             INSERT INTO tickets VALUES (4100, 'jump-prod-02', 'brute force', 'P1', 'open',
                                         'usr-sam', '2026-10-01T09:00:00.000Z');
             CREATE TABLE used_confirmations (
                 nonce TEXT PRIMARY KEY, used_at TEXT NOT NULL, outcome TEXT NOT NULL);
             INSERT INTO used_confirmations VALUES ('n0', '2026-10-01T09:00:00.000Z', 'opened');",
        )
        .unwrap();
    }
    let server = TicketsServer::new(Caller::new("usr-sam", "larkfield", "test"), &path).unwrap();
    let listed = server
        .list_tickets(&Caller::new("usr-sam", "larkfield", "test"), &Map::new())
        .unwrap();
    assert_eq!(listed["total"], 0);
    let Used::Fresh(Some(opened)) = server
        .consume(
            &Caller::new("usr-sam", "larkfield", "test"),
            "n1",
            "accept:P3",
            Some(("jump-prod-01", "disk full", "P3")),
        )
        .unwrap()
    else {
        panic!("no ticket opened");
    };
    assert_eq!(opened["id"], "INC-4101");
    // A confirmation used before answers were kept stays refused, whatever the answer.
    let sam = Caller::new("usr-sam", "larkfield", "test");
    let ticket = Some(("jump-prod-02", "brute force", "P1"));
    assert!(matches!(
        server.consume(&sam, "n0", "accept:P1", ticket),
        Ok(Used::Refused)
    ));
    // One used now: the same answer again gets the same ticket, another is refused.
    let ticket = Some(("jump-prod-01", "disk full", "P3"));
    match server.consume(&sam, "n1", "accept:P3", ticket) {
        Ok(Used::Again(Some(t))) => assert_eq!(t["id"], "INC-4101"),
        _ => panic!("the same answer again must get the same ticket"),
    }
    assert!(matches!(
        server.consume(&sam, "n1", "accept:P1", ticket),
        Ok(Used::Refused)
    ));
    assert!(matches!(
        server.consume(&sam, "n1", "decline", None),
        Ok(Used::Refused)
    ));
    // Opening the store again changes nothing more.
    drop(server);
    let again = TicketsServer::new(Caller::new("usr-sam", "larkfield", "test"), &path).unwrap();
    let listed = again
        .list_tickets(&Caller::new("usr-sam", "larkfield", "test"), &Map::new())
        .unwrap();
    assert_eq!(listed["tickets"][0]["id"], "INC-4101");
    assert_eq!(listed["total"], 1);
    let _ = std::fs::remove_dir_all(&dir);
}
