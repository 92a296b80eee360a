-- The support desk's tables, read by the Rust server and by the Python reference server
-- in bench/reference, so both search and answer from the same shape.
CREATE TABLE policies (tenant TEXT NOT NULL, doc_id TEXT NOT NULL, title TEXT NOT NULL,
                       body TEXT NOT NULL, PRIMARY KEY (tenant, doc_id));
CREATE VIRTUAL TABLE policy_fts USING fts5(
    tenant UNINDEXED, doc_id UNINDEXED, title, text, tokenize = 'porter unicode61');
CREATE TABLE tickets (ticket_id TEXT PRIMARY KEY, tenant TEXT NOT NULL,
                      customer_name TEXT NOT NULL, subject TEXT NOT NULL,
                      body TEXT NOT NULL, team TEXT NOT NULL, priority INTEGER NOT NULL,
                      status TEXT NOT NULL, created_at TEXT NOT NULL,
                      messages TEXT NOT NULL);
