//! The products the generated servers stand for: each an entity or two with the fields
//! people use, and the tools that product's MCP server typically has beyond the plain
//! list / get / create / update / delete / search of each entity. Written as such servers
//! word their tools, so that they compete with the pinned real servers for the same words
//! (issues in Jira and on GitHub, messages in Discord and in Slack, files in Dropbox and on
//! the local disk).

/// A thing a product keeps, and which of the six plain tools its server has for it.
pub struct Entity {
    /// One of them, in words (`issue`, `calendar event`).
    pub one: &'static str,
    /// Several.
    pub many: &'static str,
    /// Which plain tools: `l`ist, `g`et, `c`reate, `u`pdate, `d`elete, `s`earch.
    pub verbs: &'static str,
    /// Fields a create or update takes: name, JSON type, description.
    pub fields: &'static [(&'static str, &'static str, &'static str)],
}

/// A tool of its own: name, description, parameters (name, JSON type, description,
/// required).
pub type Extra = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str, &'static str, bool)],
);

/// One product's server.
pub struct Domain {
    /// The server's name in a servers file.
    pub server: &'static str,
    /// The product as its tools name it.
    pub product: &'static str,
    /// What it keeps.
    pub entities: &'static [Entity],
    /// Its own tools.
    pub extras: &'static [Extra],
}

const fn e(
    one: &'static str,
    many: &'static str,
    verbs: &'static str,
    fields: &'static [(&'static str, &'static str, &'static str)],
) -> Entity {
    Entity {
        one,
        many,
        verbs,
        fields,
    }
}

/// Every generated product, in the order their servers are added.
pub const DOMAINS: &[Domain] = &[
    Domain {
        server: "jira",
        product: "Jira",
        entities: &[
            e(
                "issue",
                "issues",
                "lgcuds",
                &[
                    ("summary", "string", "One-line summary of the issue."),
                    (
                        "description",
                        "string",
                        "Longer description, in Jira wiki markup.",
                    ),
                    ("issue_type", "string", "Bug, Task, Story or Epic."),
                    (
                        "priority",
                        "string",
                        "Highest, High, Medium, Low or Lowest.",
                    ),
                    ("assignee", "string", "Account id of the assignee."),
                ],
            ),
            e("project", "projects", "lg", &[]),
            e(
                "sprint",
                "sprints",
                "lgc",
                &[
                    ("name", "string", "Name of the sprint."),
                    ("start_date", "string", "ISO date the sprint starts."),
                    ("end_date", "string", "ISO date the sprint ends."),
                ],
            ),
        ],
        extras: &[
            (
                "transition_issue",
                "Move a Jira issue to another status of its workflow (for example In Progress or Done).",
                &[
                    ("issue_key", "string", "Issue key such as PROJ-123.", true),
                    (
                        "transition",
                        "string",
                        "Name or id of the transition.",
                        true,
                    ),
                ],
            ),
            (
                "add_comment",
                "Add a comment to a Jira issue.",
                &[
                    ("issue_key", "string", "Issue key such as PROJ-123.", true),
                    ("body", "string", "Comment text.", true),
                ],
            ),
            (
                "assign_issue",
                "Assign a Jira issue to a user, or unassign it.",
                &[
                    ("issue_key", "string", "Issue key such as PROJ-123.", true),
                    (
                        "account_id",
                        "string",
                        "The user's account id; empty to unassign.",
                        false,
                    ),
                ],
            ),
            (
                "search_jql",
                "Run a JQL query and return the matching Jira issues.",
                &[
                    (
                        "jql",
                        "string",
                        "A JQL query, e.g. project = OPS AND status = Open.",
                        true,
                    ),
                    ("max_results", "integer", "Most issues to return.", false),
                ],
            ),
            (
                "log_work",
                "Log time spent on a Jira issue.",
                &[
                    ("issue_key", "string", "Issue key.", true),
                    ("time_spent", "string", "Time spent, e.g. 2h 30m.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "confluence",
        product: "Confluence",
        entities: &[
            e(
                "page",
                "pages",
                "lgcuds",
                &[
                    ("title", "string", "Page title."),
                    (
                        "space_key",
                        "string",
                        "Key of the space the page belongs to.",
                    ),
                    ("body", "string", "Page content in storage format."),
                ],
            ),
            e("space", "spaces", "lg", &[]),
        ],
        extras: &[
            (
                "add_page_comment",
                "Add a footer comment to a Confluence page.",
                &[
                    ("page_id", "string", "Id of the page.", true),
                    ("body", "string", "Comment text.", true),
                ],
            ),
            (
                "get_page_children",
                "List the child pages of a Confluence page.",
                &[("page_id", "string", "Id of the parent page.", true)],
            ),
            (
                "add_label",
                "Add a label to a Confluence page.",
                &[
                    ("page_id", "string", "Id of the page.", true),
                    ("label", "string", "The label.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "linear",
        product: "Linear",
        entities: &[
            e(
                "issue",
                "issues",
                "lgcus",
                &[
                    ("title", "string", "Issue title."),
                    ("description", "string", "Markdown description."),
                    ("team_id", "string", "Team the issue belongs to."),
                    ("priority", "integer", "0 (none) to 4 (low); 1 is urgent."),
                    ("state", "string", "Workflow state name."),
                ],
            ),
            e(
                "project",
                "projects",
                "lgc",
                &[
                    ("name", "string", "Project name."),
                    ("target_date", "string", "ISO target date."),
                ],
            ),
            e("cycle", "cycles", "lg", &[]),
        ],
        extras: &[
            (
                "add_issue_comment",
                "Comment on a Linear issue.",
                &[
                    (
                        "issue_id",
                        "string",
                        "Issue identifier such as ENG-42.",
                        true,
                    ),
                    ("body", "string", "Markdown comment.", true),
                ],
            ),
            ("list_teams", "List the teams of the Linear workspace.", &[]),
        ],
    },
    Domain {
        server: "asana",
        product: "Asana",
        entities: &[
            e(
                "task",
                "tasks",
                "lgcuds",
                &[
                    ("name", "string", "Task name."),
                    ("notes", "string", "Task description."),
                    ("due_on", "string", "Due date, YYYY-MM-DD."),
                    ("assignee", "string", "User gid or email."),
                ],
            ),
            e(
                "project",
                "projects",
                "lgc",
                &[
                    ("name", "string", "Project name."),
                    ("workspace", "string", "Workspace gid."),
                ],
            ),
        ],
        extras: &[
            (
                "complete_task",
                "Mark an Asana task complete.",
                &[("task_gid", "string", "The task's gid.", true)],
            ),
            (
                "add_task_to_section",
                "Move an Asana task into a section of its project.",
                &[
                    ("task_gid", "string", "The task's gid.", true),
                    ("section_gid", "string", "The section's gid.", true),
                ],
            ),
            (
                "list_my_tasks",
                "List the Asana tasks assigned to me, due soonest first.",
                &[("workspace", "string", "Workspace gid.", false)],
            ),
        ],
    },
    Domain {
        server: "trello",
        product: "Trello",
        entities: &[
            e(
                "card",
                "cards",
                "lgcud",
                &[
                    ("name", "string", "Card title."),
                    ("desc", "string", "Card description."),
                    ("list_id", "string", "List the card is on."),
                    ("due", "string", "Due date, ISO 8601."),
                ],
            ),
            e("board", "boards", "lg", &[]),
            e(
                "list",
                "lists",
                "lc",
                &[
                    ("name", "string", "List name."),
                    ("board_id", "string", "Board the list is on."),
                ],
            ),
        ],
        extras: &[
            (
                "move_card",
                "Move a Trello card to another list.",
                &[
                    ("card_id", "string", "The card.", true),
                    ("list_id", "string", "The list to move it to.", true),
                ],
            ),
            (
                "archive_card",
                "Archive a Trello card.",
                &[("card_id", "string", "The card.", true)],
            ),
            (
                "add_checklist_item",
                "Add an item to a checklist on a Trello card.",
                &[
                    ("checklist_id", "string", "The checklist.", true),
                    ("name", "string", "Item text.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "notion",
        product: "Notion",
        entities: &[
            e(
                "page",
                "pages",
                "gcus",
                &[
                    (
                        "parent_id",
                        "string",
                        "Page or database the page goes under.",
                    ),
                    ("title", "string", "Page title."),
                    ("content", "string", "Page content as Markdown."),
                ],
            ),
            e(
                "database",
                "databases",
                "lgc",
                &[
                    ("title", "string", "Database title."),
                    ("parent_page_id", "string", "Page that holds it."),
                ],
            ),
        ],
        extras: &[
            (
                "query_database",
                "Query a Notion database with filters and sorts; returns its rows as pages.",
                &[
                    ("database_id", "string", "The database.", true),
                    ("filter", "object", "A Notion filter object.", false),
                ],
            ),
            (
                "append_blocks",
                "Append content blocks (paragraphs, headings, to-dos) to a Notion page.",
                &[
                    ("page_id", "string", "The page.", true),
                    (
                        "markdown",
                        "string",
                        "Content to append, as Markdown.",
                        true,
                    ),
                ],
            ),
            (
                "add_comment",
                "Add a comment to a Notion page or discussion.",
                &[
                    ("page_id", "string", "The page.", true),
                    ("text", "string", "Comment text.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "zendesk",
        product: "Zendesk",
        entities: &[
            e(
                "ticket",
                "tickets",
                "lgcus",
                &[
                    ("subject", "string", "Ticket subject."),
                    ("comment", "string", "First comment of the ticket."),
                    ("priority", "string", "urgent, high, normal or low."),
                    ("requester_email", "string", "Email of the customer."),
                ],
            ),
            e("user", "users", "lgs", &[]),
            e("macro", "macros", "l", &[]),
        ],
        extras: &[
            (
                "reply_to_ticket",
                "Add a public reply or an internal note to a Zendesk ticket.",
                &[
                    ("ticket_id", "integer", "The ticket number.", true),
                    ("body", "string", "Reply text.", true),
                    ("public", "boolean", "Visible to the requester.", false),
                ],
            ),
            (
                "apply_macro",
                "Apply a macro to a Zendesk ticket.",
                &[
                    ("ticket_id", "integer", "The ticket number.", true),
                    ("macro_id", "integer", "The macro.", true),
                ],
            ),
            (
                "merge_tickets",
                "Merge Zendesk tickets into one.",
                &[
                    ("target_id", "integer", "Ticket that stays.", true),
                    ("source_ids", "array", "Tickets merged into it.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "intercom",
        product: "Intercom",
        entities: &[
            e("conversation", "conversations", "lgs", &[]),
            e(
                "contact",
                "contacts",
                "lgcus",
                &[
                    ("email", "string", "Contact email."),
                    ("name", "string", "Full name."),
                    ("phone", "string", "Phone number."),
                ],
            ),
            e(
                "article",
                "help center articles",
                "lgc",
                &[
                    ("title", "string", "Article title."),
                    ("body", "string", "Article body in HTML."),
                ],
            ),
        ],
        extras: &[
            (
                "reply_to_conversation",
                "Reply to an Intercom conversation as an admin.",
                &[
                    ("conversation_id", "string", "The conversation.", true),
                    ("body", "string", "Reply text.", true),
                ],
            ),
            (
                "close_conversation",
                "Close an Intercom conversation.",
                &[("conversation_id", "string", "The conversation.", true)],
            ),
        ],
    },
    Domain {
        server: "hubspot",
        product: "HubSpot",
        entities: &[
            e(
                "contact",
                "contacts",
                "lgcuds",
                &[
                    ("email", "string", "Email address."),
                    ("firstname", "string", "First name."),
                    ("lastname", "string", "Last name."),
                    ("company", "string", "Company name."),
                ],
            ),
            e(
                "deal",
                "deals",
                "lgcus",
                &[
                    ("dealname", "string", "Name of the deal."),
                    ("amount", "number", "Deal amount."),
                    ("dealstage", "string", "Pipeline stage."),
                ],
            ),
            e(
                "company",
                "companies",
                "lgcs",
                &[
                    ("name", "string", "Company name."),
                    ("domain", "string", "Company web domain."),
                ],
            ),
        ],
        extras: &[(
            "log_engagement",
            "Log a call, email or meeting on a HubSpot record.",
            &[
                ("object_id", "string", "The contact, company or deal.", true),
                ("type", "string", "CALL, EMAIL or MEETING.", true),
                ("notes", "string", "What happened.", false),
            ],
        )],
    },
    Domain {
        server: "salesforce",
        product: "Salesforce",
        entities: &[
            e(
                "lead",
                "leads",
                "lgcus",
                &[
                    ("last_name", "string", "Lead last name."),
                    ("company", "string", "Company."),
                    ("email", "string", "Email."),
                    ("status", "string", "Lead status."),
                ],
            ),
            e(
                "opportunity",
                "opportunities",
                "lgcu",
                &[
                    ("name", "string", "Opportunity name."),
                    ("amount", "number", "Amount."),
                    ("stage_name", "string", "Sales stage."),
                    ("close_date", "string", "Expected close date."),
                ],
            ),
            e("account", "accounts", "lgs", &[]),
        ],
        extras: &[
            (
                "run_soql",
                "Run a SOQL query against Salesforce and return the records.",
                &[(
                    "query",
                    "string",
                    "SOQL, e.g. SELECT Id, Name FROM Account LIMIT 10.",
                    true,
                )],
            ),
            (
                "convert_lead",
                "Convert a Salesforce lead into an account, contact and opportunity.",
                &[("lead_id", "string", "The lead.", true)],
            ),
        ],
    },
    Domain {
        server: "stripe",
        product: "Stripe",
        entities: &[
            e(
                "customer",
                "customers",
                "lgcus",
                &[
                    ("email", "string", "Customer email."),
                    ("name", "string", "Customer name."),
                ],
            ),
            e(
                "payment intent",
                "payment intents",
                "lgc",
                &[
                    ("amount", "integer", "Amount in the smallest currency unit."),
                    ("currency", "string", "Three-letter ISO currency code."),
                    ("customer", "string", "Customer id."),
                ],
            ),
            e(
                "invoice",
                "invoices",
                "lgc",
                &[
                    ("customer", "string", "Customer id."),
                    ("due_date", "integer", "Unix time the invoice is due."),
                ],
            ),
            e(
                "subscription",
                "subscriptions",
                "lgcu",
                &[
                    ("customer", "string", "Customer id."),
                    ("price", "string", "Price id."),
                ],
            ),
        ],
        extras: &[
            (
                "create_refund",
                "Refund a Stripe charge or payment intent, fully or in part.",
                &[
                    ("payment_intent", "string", "The payment to refund.", true),
                    (
                        "amount",
                        "integer",
                        "Amount to refund; the whole payment if absent.",
                        false,
                    ),
                ],
            ),
            (
                "cancel_subscription",
                "Cancel a Stripe subscription now or at the end of its period.",
                &[
                    ("subscription_id", "string", "The subscription.", true),
                    (
                        "at_period_end",
                        "boolean",
                        "Cancel at the end of the period.",
                        false,
                    ),
                ],
            ),
            (
                "retrieve_balance",
                "Get the Stripe account's available and pending balance.",
                &[],
            ),
            (
                "create_payment_link",
                "Create a Stripe payment link for a price.",
                &[
                    ("price", "string", "Price id.", true),
                    ("quantity", "integer", "How many.", false),
                ],
            ),
        ],
    },
    Domain {
        server: "shopify",
        product: "Shopify",
        entities: &[
            e(
                "product",
                "products",
                "lgcuds",
                &[
                    ("title", "string", "Product title."),
                    ("body_html", "string", "Description in HTML."),
                    ("vendor", "string", "Vendor."),
                    ("price", "string", "Price of the default variant."),
                ],
            ),
            e("order", "orders", "lgs", &[]),
            e("customer", "customers", "lgs", &[]),
        ],
        extras: &[
            (
                "fulfill_order",
                "Mark a Shopify order as fulfilled, with a tracking number.",
                &[
                    ("order_id", "integer", "The order.", true),
                    (
                        "tracking_number",
                        "string",
                        "Carrier tracking number.",
                        false,
                    ),
                ],
            ),
            (
                "adjust_inventory",
                "Adjust the stock level of a Shopify product variant at a location.",
                &[
                    (
                        "inventory_item_id",
                        "integer",
                        "The variant's inventory item.",
                        true,
                    ),
                    ("location_id", "integer", "The location.", true),
                    (
                        "delta",
                        "integer",
                        "Units to add (negative to remove).",
                        true,
                    ),
                ],
            ),
            (
                "create_discount_code",
                "Create a discount code for a Shopify price rule.",
                &[
                    ("price_rule_id", "integer", "The price rule.", true),
                    ("code", "string", "The code customers type.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "quickbooks",
        product: "QuickBooks",
        entities: &[
            e(
                "invoice",
                "invoices",
                "lgcus",
                &[
                    ("customer_ref", "string", "Customer id."),
                    ("amount", "number", "Total amount."),
                    ("due_date", "string", "Due date."),
                ],
            ),
            e(
                "bill",
                "bills",
                "lgc",
                &[
                    ("vendor_ref", "string", "Vendor id."),
                    ("amount", "number", "Amount owed."),
                ],
            ),
            e("vendor", "vendors", "lg", &[]),
        ],
        extras: &[
            (
                "profit_and_loss_report",
                "Run the QuickBooks profit and loss report for a period.",
                &[
                    ("start_date", "string", "First day.", true),
                    ("end_date", "string", "Last day.", true),
                ],
            ),
            (
                "record_payment",
                "Record a customer payment against QuickBooks invoices.",
                &[
                    ("customer_ref", "string", "Customer id.", true),
                    ("amount", "number", "Amount received.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "twilio",
        product: "Twilio",
        entities: &[
            e("message", "SMS messages", "lg", &[]),
            e("call", "calls", "lg", &[]),
        ],
        extras: &[
            (
                "send_sms",
                "Send an SMS text message to a phone number with Twilio.",
                &[
                    (
                        "to",
                        "string",
                        "Phone number in E.164 form, e.g. +14155550100.",
                        true,
                    ),
                    ("body", "string", "Message text.", true),
                    ("from", "string", "Sending number.", false),
                ],
            ),
            (
                "make_call",
                "Place an outbound phone call with Twilio that plays a message.",
                &[
                    ("to", "string", "Phone number in E.164 form.", true),
                    ("say", "string", "Text read to the person.", true),
                ],
            ),
            (
                "lookup_phone_number",
                "Look up a phone number's carrier and line type with Twilio Lookup.",
                &[("phone_number", "string", "The number.", true)],
            ),
        ],
    },
    Domain {
        server: "sendgrid",
        product: "SendGrid",
        entities: &[
            e(
                "template",
                "email templates",
                "lgc",
                &[
                    ("name", "string", "Template name."),
                    ("html", "string", "HTML content."),
                ],
            ),
            e(
                "contact list",
                "contact lists",
                "lc",
                &[("name", "string", "List name.")],
            ),
        ],
        extras: &[
            (
                "send_email",
                "Send a transactional email through SendGrid.",
                &[
                    ("to", "string", "Recipient address.", true),
                    ("subject", "string", "Subject line.", true),
                    ("html", "string", "HTML body.", true),
                    ("from", "string", "Sender address.", false),
                ],
            ),
            (
                "get_email_stats",
                "Get SendGrid delivery, open and click statistics for a date range.",
                &[
                    ("start_date", "string", "First day, YYYY-MM-DD.", true),
                    ("end_date", "string", "Last day.", false),
                ],
            ),
            (
                "add_contacts",
                "Add or update marketing contacts in SendGrid lists.",
                &[
                    ("emails", "array", "Addresses to add.", true),
                    ("list_ids", "array", "Lists to add them to.", false),
                ],
            ),
        ],
    },
    Domain {
        server: "mailchimp",
        product: "Mailchimp",
        entities: &[
            e(
                "campaign",
                "campaigns",
                "lgcd",
                &[
                    ("subject_line", "string", "Subject line."),
                    ("list_id", "string", "Audience it goes to."),
                ],
            ),
            e("audience", "audiences", "lg", &[]),
            e(
                "member",
                "audience members",
                "lgcu",
                &[
                    ("email_address", "string", "Subscriber email."),
                    ("status", "string", "subscribed, unsubscribed or pending."),
                ],
            ),
        ],
        extras: &[
            (
                "send_campaign",
                "Send a Mailchimp campaign now.",
                &[("campaign_id", "string", "The campaign.", true)],
            ),
            (
                "campaign_report",
                "Get the opens, clicks and bounces of a sent Mailchimp campaign.",
                &[("campaign_id", "string", "The campaign.", true)],
            ),
        ],
    },
    Domain {
        server: "gmail",
        product: "Gmail",
        entities: &[
            e("message", "emails", "lgs", &[]),
            e(
                "draft",
                "drafts",
                "lgcd",
                &[
                    ("to", "string", "Recipients, comma-separated."),
                    ("subject", "string", "Subject."),
                    ("body", "string", "Plain-text body."),
                ],
            ),
            e(
                "label",
                "labels",
                "lc",
                &[("name", "string", "Label name.")],
            ),
        ],
        extras: &[
            (
                "send_email",
                "Send an email from the user's Gmail account.",
                &[
                    ("to", "string", "Recipients, comma-separated.", true),
                    ("subject", "string", "Subject.", true),
                    ("body", "string", "Plain-text body.", true),
                    ("cc", "string", "Cc recipients.", false),
                ],
            ),
            (
                "reply_to_email",
                "Reply to a Gmail message in its thread.",
                &[
                    ("message_id", "string", "The message replied to.", true),
                    ("body", "string", "Reply text.", true),
                ],
            ),
            (
                "modify_labels",
                "Add or remove labels on Gmail messages, e.g. to archive or mark as read.",
                &[
                    ("message_ids", "array", "Messages.", true),
                    ("add", "array", "Labels to add.", false),
                    ("remove", "array", "Labels to remove.", false),
                ],
            ),
            (
                "get_attachment",
                "Download an attachment of a Gmail message.",
                &[
                    ("message_id", "string", "The message.", true),
                    ("attachment_id", "string", "The attachment.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "google-calendar",
        product: "Google Calendar",
        entities: &[
            e(
                "event",
                "calendar events",
                "lgcuds",
                &[
                    ("summary", "string", "Event title."),
                    ("start", "string", "Start, RFC 3339."),
                    ("end", "string", "End, RFC 3339."),
                    ("attendees", "array", "Emails of the guests."),
                    ("location", "string", "Where."),
                ],
            ),
            e("calendar", "calendars", "l", &[]),
        ],
        extras: &[
            (
                "find_free_time",
                "Find free slots shared by several people's Google calendars.",
                &[
                    ("emails", "array", "Whose calendars.", true),
                    ("time_min", "string", "From.", true),
                    ("time_max", "string", "Until.", true),
                    ("duration_minutes", "integer", "Length of the slot.", false),
                ],
            ),
            (
                "respond_to_event",
                "Accept, decline or tentatively accept a Google Calendar invitation.",
                &[
                    ("event_id", "string", "The event.", true),
                    (
                        "response",
                        "string",
                        "accepted, declined or tentative.",
                        true,
                    ),
                ],
            ),
        ],
    },
    Domain {
        server: "outlook",
        product: "Outlook",
        entities: &[
            e("mail", "mail messages", "lgs", &[]),
            e(
                "event",
                "events",
                "lgc",
                &[
                    ("subject", "string", "Event subject."),
                    ("start", "string", "Start time."),
                    ("end", "string", "End time."),
                ],
            ),
            e(
                "contact",
                "contacts",
                "lc",
                &[
                    ("display_name", "string", "Name."),
                    ("email", "string", "Email."),
                ],
            ),
        ],
        extras: &[
            (
                "send_mail",
                "Send an email with Microsoft Outlook.",
                &[
                    ("to", "array", "Recipients.", true),
                    ("subject", "string", "Subject.", true),
                    ("body", "string", "Body.", true),
                ],
            ),
            (
                "move_mail",
                "Move an Outlook message to another mail folder.",
                &[
                    ("message_id", "string", "The message.", true),
                    ("folder", "string", "Destination folder.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "teams",
        product: "Microsoft Teams",
        entities: &[
            e(
                "channel",
                "channels",
                "lgc",
                &[
                    ("team_id", "string", "The team."),
                    ("display_name", "string", "Channel name."),
                    ("description", "string", "What it is for."),
                ],
            ),
            e("chat", "chats", "lg", &[]),
            e("team", "teams", "lg", &[]),
        ],
        extras: &[
            (
                "send_channel_message",
                "Post a message to a Microsoft Teams channel.",
                &[
                    ("team_id", "string", "The team.", true),
                    ("channel_id", "string", "The channel.", true),
                    ("content", "string", "Message, HTML allowed.", true),
                ],
            ),
            (
                "send_chat_message",
                "Send a message in a Microsoft Teams chat.",
                &[
                    ("chat_id", "string", "The chat.", true),
                    ("content", "string", "Message.", true),
                ],
            ),
            (
                "list_channel_messages",
                "Read recent messages of a Microsoft Teams channel.",
                &[
                    ("team_id", "string", "The team.", true),
                    ("channel_id", "string", "The channel.", true),
                    ("top", "integer", "How many.", false),
                ],
            ),
        ],
    },
    Domain {
        server: "discord",
        product: "Discord",
        entities: &[
            e(
                "channel",
                "channels",
                "lgc",
                &[
                    ("guild_id", "string", "The server (guild)."),
                    ("name", "string", "Channel name."),
                ],
            ),
            e("member", "server members", "lg", &[]),
        ],
        extras: &[
            (
                "send_message",
                "Send a message to a Discord channel.",
                &[
                    ("channel_id", "string", "The channel.", true),
                    ("content", "string", "Message text.", true),
                ],
            ),
            (
                "read_messages",
                "Read recent messages of a Discord channel.",
                &[
                    ("channel_id", "string", "The channel.", true),
                    ("limit", "integer", "How many (1-100).", false),
                ],
            ),
            (
                "add_reaction",
                "React to a Discord message with an emoji.",
                &[
                    ("channel_id", "string", "The channel.", true),
                    ("message_id", "string", "The message.", true),
                    ("emoji", "string", "Emoji.", true),
                ],
            ),
            (
                "create_thread",
                "Start a thread from a Discord message.",
                &[
                    ("channel_id", "string", "The channel.", true),
                    ("message_id", "string", "The message.", true),
                    ("name", "string", "Thread name.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "zoom",
        product: "Zoom",
        entities: &[
            e(
                "meeting",
                "meetings",
                "lgcud",
                &[
                    ("topic", "string", "Meeting topic."),
                    ("start_time", "string", "Start, ISO 8601."),
                    ("duration", "integer", "Minutes."),
                ],
            ),
            e("recording", "cloud recordings", "lg", &[]),
        ],
        extras: &[
            (
                "get_meeting_transcript",
                "Get the transcript of a recorded Zoom meeting.",
                &[("meeting_id", "string", "The meeting.", true)],
            ),
            (
                "list_participants",
                "List who joined a past Zoom meeting.",
                &[("meeting_id", "string", "The meeting.", true)],
            ),
        ],
    },
    Domain {
        server: "dropbox",
        product: "Dropbox",
        entities: &[e(
            "folder",
            "folders",
            "lc",
            &[("path", "string", "Folder path, e.g. /Projects.")],
        )],
        extras: &[
            (
                "upload_file",
                "Upload a file to Dropbox.",
                &[
                    ("path", "string", "Destination path in Dropbox.", true),
                    ("content_base64", "string", "File bytes, base64.", true),
                ],
            ),
            (
                "download_file",
                "Download a file from Dropbox.",
                &[("path", "string", "Path in Dropbox.", true)],
            ),
            (
                "search_files",
                "Search Dropbox file names and contents.",
                &[("query", "string", "Words to look for.", true)],
            ),
            (
                "create_shared_link",
                "Create a shared link to a Dropbox file or folder.",
                &[("path", "string", "Path in Dropbox.", true)],
            ),
            (
                "move_file",
                "Move or rename a file in Dropbox.",
                &[
                    ("from_path", "string", "Current path.", true),
                    ("to_path", "string", "New path.", true),
                ],
            ),
            (
                "delete_file",
                "Delete a file or folder in Dropbox.",
                &[("path", "string", "Path in Dropbox.", true)],
            ),
        ],
    },
    Domain {
        server: "onedrive",
        product: "OneDrive",
        entities: &[e("item", "drive items", "lgd", &[])],
        extras: &[
            (
                "upload_file",
                "Upload a file to OneDrive.",
                &[
                    ("path", "string", "Destination path.", true),
                    ("content_base64", "string", "File bytes, base64.", true),
                ],
            ),
            (
                "share_item",
                "Share a OneDrive file with people by email.",
                &[
                    ("item_id", "string", "The file.", true),
                    ("emails", "array", "Who to share with.", true),
                    ("role", "string", "read or write.", false),
                ],
            ),
            (
                "search_drive",
                "Search OneDrive for files.",
                &[("query", "string", "Words.", true)],
            ),
        ],
    },
    Domain {
        server: "aws-s3",
        product: "Amazon S3",
        entities: &[e(
            "bucket",
            "buckets",
            "lcd",
            &[
                ("bucket", "string", "Bucket name."),
                ("region", "string", "AWS region."),
            ],
        )],
        extras: &[
            (
                "list_objects",
                "List the objects in an S3 bucket under a prefix.",
                &[
                    ("bucket", "string", "Bucket name.", true),
                    ("prefix", "string", "Key prefix.", false),
                ],
            ),
            (
                "get_object",
                "Read an object from an S3 bucket.",
                &[
                    ("bucket", "string", "Bucket name.", true),
                    ("key", "string", "Object key.", true),
                ],
            ),
            (
                "put_object",
                "Write an object to an S3 bucket.",
                &[
                    ("bucket", "string", "Bucket name.", true),
                    ("key", "string", "Object key.", true),
                    ("body", "string", "Content.", true),
                ],
            ),
            (
                "delete_object",
                "Delete an object from an S3 bucket.",
                &[
                    ("bucket", "string", "Bucket name.", true),
                    ("key", "string", "Object key.", true),
                ],
            ),
            (
                "presign_url",
                "Make a pre-signed URL to download an S3 object.",
                &[
                    ("bucket", "string", "Bucket name.", true),
                    ("key", "string", "Object key.", true),
                    ("expires_in", "integer", "Seconds.", false),
                ],
            ),
        ],
    },
    Domain {
        server: "dynamodb",
        product: "DynamoDB",
        entities: &[e(
            "table",
            "tables",
            "lgcd",
            &[
                ("table_name", "string", "Table name."),
                ("key_schema", "array", "Partition and sort keys."),
            ],
        )],
        extras: &[
            (
                "get_item",
                "Read one item of a DynamoDB table by its key.",
                &[
                    ("table_name", "string", "The table.", true),
                    ("key", "object", "The item's key.", true),
                ],
            ),
            (
                "put_item",
                "Write an item to a DynamoDB table.",
                &[
                    ("table_name", "string", "The table.", true),
                    ("item", "object", "The item.", true),
                ],
            ),
            (
                "query_table",
                "Query a DynamoDB table by partition key.",
                &[
                    ("table_name", "string", "The table.", true),
                    ("key_condition", "string", "Key condition expression.", true),
                ],
            ),
            (
                "scan_table",
                "Scan a whole DynamoDB table, with an optional filter.",
                &[
                    ("table_name", "string", "The table.", true),
                    ("filter", "string", "Filter expression.", false),
                ],
            ),
        ],
    },
    Domain {
        server: "bigquery",
        product: "BigQuery",
        entities: &[
            e(
                "dataset",
                "datasets",
                "lgc",
                &[
                    ("dataset_id", "string", "Dataset id."),
                    ("location", "string", "Location, e.g. EU."),
                ],
            ),
            e("table", "tables", "lg", &[]),
        ],
        extras: &[
            (
                "run_query",
                "Run a SQL query in BigQuery and return the rows.",
                &[
                    ("sql", "string", "Standard SQL.", true),
                    (
                        "dry_run",
                        "boolean",
                        "Only estimate the bytes it would scan.",
                        false,
                    ),
                ],
            ),
            (
                "get_table_schema",
                "Get the columns and types of a BigQuery table.",
                &[("table", "string", "project.dataset.table", true)],
            ),
        ],
    },
    Domain {
        server: "snowflake",
        product: "Snowflake",
        entities: &[e("warehouse", "warehouses", "l", &[])],
        extras: &[
            (
                "execute_sql",
                "Execute a SQL statement in Snowflake and return the result set.",
                &[
                    ("statement", "string", "SQL.", true),
                    ("warehouse", "string", "Warehouse to run it on.", false),
                ],
            ),
            (
                "list_databases",
                "List the Snowflake databases you can see.",
                &[],
            ),
            (
                "list_schemas",
                "List the schemas of a Snowflake database.",
                &[("database", "string", "Database.", true)],
            ),
            (
                "describe_table",
                "Describe the columns of a Snowflake table.",
                &[("table", "string", "db.schema.table", true)],
            ),
        ],
    },
    Domain {
        server: "mongodb",
        product: "MongoDB",
        entities: &[e(
            "collection",
            "collections",
            "lcd",
            &[
                ("database", "string", "Database name."),
                ("collection", "string", "Collection name."),
            ],
        )],
        extras: &[
            (
                "find_documents",
                "Find documents in a MongoDB collection matching a filter.",
                &[
                    ("collection", "string", "Collection.", true),
                    ("filter", "object", "Query filter.", false),
                    ("limit", "integer", "Most documents.", false),
                ],
            ),
            (
                "insert_documents",
                "Insert documents into a MongoDB collection.",
                &[
                    ("collection", "string", "Collection.", true),
                    ("documents", "array", "Documents.", true),
                ],
            ),
            (
                "update_documents",
                "Update the MongoDB documents that match a filter.",
                &[
                    ("collection", "string", "Collection.", true),
                    ("filter", "object", "Which.", true),
                    ("update", "object", "Update operators.", true),
                ],
            ),
            (
                "aggregate",
                "Run an aggregation pipeline on a MongoDB collection.",
                &[
                    ("collection", "string", "Collection.", true),
                    ("pipeline", "array", "Stages.", true),
                ],
            ),
            (
                "create_index",
                "Create an index on a MongoDB collection.",
                &[
                    ("collection", "string", "Collection.", true),
                    ("keys", "object", "Fields and order.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "elasticsearch",
        product: "Elasticsearch",
        entities: &[e(
            "index",
            "indices",
            "lgcd",
            &[
                ("index", "string", "Index name."),
                ("mappings", "object", "Field mappings."),
            ],
        )],
        extras: &[
            (
                "search_documents",
                "Search an Elasticsearch index with the query DSL.",
                &[
                    ("index", "string", "Index.", true),
                    ("query", "object", "Query DSL.", true),
                    ("size", "integer", "Hits.", false),
                ],
            ),
            (
                "index_document",
                "Add or replace a document in an Elasticsearch index.",
                &[
                    ("index", "string", "Index.", true),
                    ("document", "object", "The document.", true),
                    ("id", "string", "Document id.", false),
                ],
            ),
            (
                "cluster_health",
                "Get the Elasticsearch cluster's health.",
                &[],
            ),
        ],
    },
    Domain {
        server: "datadog",
        product: "Datadog",
        entities: &[
            e(
                "monitor",
                "monitors",
                "lgcud",
                &[
                    ("name", "string", "Monitor name."),
                    ("query", "string", "Metric query and threshold."),
                    ("message", "string", "Notification text."),
                ],
            ),
            e("dashboard", "dashboards", "lg", &[]),
            e(
                "incident",
                "incidents",
                "lgc",
                &[
                    ("title", "string", "Incident title."),
                    ("severity", "string", "SEV-1 to SEV-5."),
                ],
            ),
        ],
        extras: &[
            (
                "query_metrics",
                "Query Datadog timeseries metrics for a period.",
                &[
                    (
                        "query",
                        "string",
                        "Metric query, e.g. avg:system.cpu.user{*}.",
                        true,
                    ),
                    ("from", "integer", "Unix start.", true),
                    ("to", "integer", "Unix end.", true),
                ],
            ),
            (
                "search_logs",
                "Search Datadog logs.",
                &[
                    (
                        "query",
                        "string",
                        "Log query, e.g. service:web status:error.",
                        true,
                    ),
                    ("from", "string", "Start, e.g. now-1h.", false),
                ],
            ),
            (
                "mute_monitor",
                "Mute a Datadog monitor for a while.",
                &[
                    ("monitor_id", "integer", "The monitor.", true),
                    ("end", "integer", "Unix time the mute ends.", false),
                ],
            ),
        ],
    },
    Domain {
        server: "pagerduty",
        product: "PagerDuty",
        entities: &[
            e(
                "incident",
                "incidents",
                "lgcu",
                &[
                    ("title", "string", "Incident title."),
                    ("service_id", "string", "Service affected."),
                    ("urgency", "string", "high or low."),
                ],
            ),
            e("service", "services", "lg", &[]),
            e("schedule", "on-call schedules", "lg", &[]),
        ],
        extras: &[
            (
                "acknowledge_incident",
                "Acknowledge a PagerDuty incident.",
                &[("incident_id", "string", "The incident.", true)],
            ),
            (
                "resolve_incident",
                "Resolve a PagerDuty incident.",
                &[("incident_id", "string", "The incident.", true)],
            ),
            (
                "who_is_on_call",
                "Who is on call now for a PagerDuty escalation policy or schedule.",
                &[("schedule_id", "string", "Schedule.", false)],
            ),
        ],
    },
    Domain {
        server: "grafana",
        product: "Grafana",
        entities: &[
            e(
                "dashboard",
                "dashboards",
                "lgcs",
                &[
                    ("title", "string", "Dashboard title."),
                    ("panels", "array", "Panels."),
                ],
            ),
            e("alert rule", "alert rules", "lg", &[]),
            e("datasource", "datasources", "l", &[]),
        ],
        extras: &[
            (
                "query_prometheus",
                "Run a PromQL query through a Grafana Prometheus datasource.",
                &[
                    ("expr", "string", "PromQL.", true),
                    ("start", "string", "Start.", false),
                    ("end", "string", "End.", false),
                ],
            ),
            (
                "query_loki",
                "Run a LogQL query through a Grafana Loki datasource.",
                &[("query", "string", "LogQL.", true)],
            ),
            (
                "create_annotation",
                "Add an annotation to Grafana dashboards, e.g. for a deploy.",
                &[
                    ("text", "string", "What happened.", true),
                    ("tags", "array", "Tags.", false),
                ],
            ),
        ],
    },
    Domain {
        server: "docker",
        product: "Docker",
        entities: &[
            e(
                "container",
                "containers",
                "lgcd",
                &[
                    ("image", "string", "Image to run."),
                    ("name", "string", "Container name."),
                    ("ports", "object", "Port bindings."),
                ],
            ),
            e("image", "images", "ld", &[]),
            e(
                "volume",
                "volumes",
                "lcd",
                &[("name", "string", "Volume name.")],
            ),
        ],
        extras: &[
            (
                "start_container",
                "Start a stopped Docker container.",
                &[("container", "string", "Name or id.", true)],
            ),
            (
                "stop_container",
                "Stop a running Docker container.",
                &[("container", "string", "Name or id.", true)],
            ),
            (
                "container_logs",
                "Fetch the logs of a Docker container.",
                &[
                    ("container", "string", "Name or id.", true),
                    ("tail", "integer", "Last N lines.", false),
                ],
            ),
            (
                "pull_image",
                "Pull a Docker image from a registry.",
                &[("image", "string", "Image and tag.", true)],
            ),
            (
                "build_image",
                "Build a Docker image from a Dockerfile.",
                &[
                    ("context_path", "string", "Build context folder.", true),
                    ("tag", "string", "Tag for the image.", true),
                ],
            ),
            (
                "exec_in_container",
                "Run a command inside a running Docker container.",
                &[
                    ("container", "string", "Name or id.", true),
                    ("command", "array", "Command and arguments.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "terraform",
        product: "Terraform Cloud",
        entities: &[
            e(
                "workspace",
                "workspaces",
                "lgc",
                &[
                    ("name", "string", "Workspace name."),
                    ("terraform_version", "string", "Version."),
                ],
            ),
            e(
                "run",
                "runs",
                "lgc",
                &[
                    ("workspace_id", "string", "Workspace."),
                    ("message", "string", "Why."),
                ],
            ),
        ],
        extras: &[
            (
                "apply_run",
                "Apply a planned Terraform Cloud run.",
                &[("run_id", "string", "The run.", true)],
            ),
            (
                "get_plan_output",
                "Get the plan output of a Terraform Cloud run.",
                &[("run_id", "string", "The run.", true)],
            ),
            (
                "list_state_versions",
                "List the state versions of a Terraform Cloud workspace.",
                &[("workspace_id", "string", "The workspace.", true)],
            ),
        ],
    },
    Domain {
        server: "vercel",
        product: "Vercel",
        entities: &[
            e(
                "deployment",
                "deployments",
                "lgc",
                &[
                    ("project", "string", "Project name."),
                    ("git_ref", "string", "Branch or commit."),
                ],
            ),
            e("project", "projects", "lg", &[]),
            e(
                "domain",
                "domains",
                "lc",
                &[("name", "string", "Domain name.")],
            ),
        ],
        extras: &[
            (
                "get_deployment_logs",
                "Get the build logs of a Vercel deployment.",
                &[("deployment_id", "string", "The deployment.", true)],
            ),
            (
                "promote_deployment",
                "Promote a Vercel deployment to production.",
                &[("deployment_id", "string", "The deployment.", true)],
            ),
            (
                "set_env_variable",
                "Set an environment variable of a Vercel project.",
                &[
                    ("project", "string", "Project.", true),
                    ("key", "string", "Name.", true),
                    ("value", "string", "Value.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "cloudflare",
        product: "Cloudflare",
        entities: &[
            e("zone", "zones", "lg", &[]),
            e(
                "dns record",
                "DNS records",
                "lcud",
                &[
                    ("zone_id", "string", "Zone."),
                    ("type", "string", "A, AAAA, CNAME, TXT, MX."),
                    ("name", "string", "Record name."),
                    ("content", "string", "Record value."),
                ],
            ),
            e("worker", "Workers scripts", "lg", &[]),
        ],
        extras: &[
            (
                "purge_cache",
                "Purge Cloudflare's cache for a zone, whole or by URL.",
                &[
                    ("zone_id", "string", "Zone.", true),
                    ("files", "array", "URLs; everything if absent.", false),
                ],
            ),
            (
                "get_analytics",
                "Get Cloudflare traffic analytics of a zone.",
                &[
                    ("zone_id", "string", "Zone.", true),
                    ("since", "string", "Start.", false),
                ],
            ),
        ],
    },
    Domain {
        server: "figma",
        product: "Figma",
        entities: &[e("file", "design files", "lg", &[])],
        extras: &[
            (
                "get_node",
                "Get one frame or component of a Figma file, with its layout.",
                &[
                    ("file_key", "string", "The file.", true),
                    ("node_id", "string", "The node.", true),
                ],
            ),
            (
                "export_image",
                "Export frames of a Figma file as PNG, JPG or SVG.",
                &[
                    ("file_key", "string", "The file.", true),
                    ("node_ids", "array", "Frames.", true),
                    ("format", "string", "png, jpg or svg.", false),
                ],
            ),
            (
                "list_comments",
                "List the comments on a Figma file.",
                &[("file_key", "string", "The file.", true)],
            ),
            (
                "post_comment",
                "Comment on a Figma file.",
                &[
                    ("file_key", "string", "The file.", true),
                    ("message", "string", "Comment.", true),
                ],
            ),
            (
                "get_styles",
                "List the color and text styles of a Figma file.",
                &[("file_key", "string", "The file.", true)],
            ),
        ],
    },
    Domain {
        server: "airtable",
        product: "Airtable",
        entities: &[
            e(
                "record",
                "records",
                "lgcud",
                &[
                    ("base_id", "string", "The base."),
                    ("table", "string", "Table name."),
                    ("fields", "object", "Field values."),
                ],
            ),
            e("base", "bases", "l", &[]),
        ],
        extras: &[
            (
                "get_base_schema",
                "Get the tables and fields of an Airtable base.",
                &[("base_id", "string", "The base.", true)],
            ),
            (
                "search_records",
                "Search the records of an Airtable table with a formula.",
                &[
                    ("base_id", "string", "The base.", true),
                    ("table", "string", "Table.", true),
                    ("formula", "string", "filterByFormula.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "spotify",
        product: "Spotify",
        entities: &[e(
            "playlist",
            "playlists",
            "lgcu",
            &[
                ("name", "string", "Playlist name."),
                ("public", "boolean", "Public or not."),
            ],
        )],
        extras: &[
            (
                "search_music",
                "Search Spotify for tracks, albums or artists.",
                &[
                    ("query", "string", "Words.", true),
                    ("type", "string", "track, album or artist.", false),
                ],
            ),
            (
                "play",
                "Start or resume playback on the active Spotify device.",
                &[("uri", "string", "Track, album or playlist URI.", false)],
            ),
            ("pause", "Pause Spotify playback.", &[]),
            ("skip_to_next", "Skip to the next track on Spotify.", &[]),
            (
                "add_tracks_to_playlist",
                "Add tracks to a Spotify playlist.",
                &[
                    ("playlist_id", "string", "Playlist.", true),
                    ("uris", "array", "Track URIs.", true),
                ],
            ),
            ("currently_playing", "What is playing on Spotify now.", &[]),
        ],
    },
    Domain {
        server: "youtube",
        product: "YouTube",
        entities: &[
            e("video", "videos", "gs", &[]),
            e(
                "playlist",
                "playlists",
                "lc",
                &[
                    ("title", "string", "Title."),
                    ("privacy", "string", "public, unlisted or private."),
                ],
            ),
        ],
        extras: &[
            (
                "get_transcript",
                "Get the transcript (captions) of a YouTube video.",
                &[
                    ("video_id", "string", "Video id or URL.", true),
                    ("language", "string", "Language code.", false),
                ],
            ),
            (
                "list_channel_videos",
                "List the latest videos of a YouTube channel.",
                &[("channel_id", "string", "Channel.", true)],
            ),
            (
                "get_video_comments",
                "Read the top comments of a YouTube video.",
                &[("video_id", "string", "Video.", true)],
            ),
        ],
    },
    Domain {
        server: "weather",
        product: "the weather service",
        entities: &[],
        extras: &[
            (
                "get_forecast",
                "Get the weather forecast for a place for the next days: temperature, rain, wind.",
                &[
                    ("location", "string", "City or latitude,longitude.", true),
                    ("days", "integer", "1-14.", false),
                ],
            ),
            (
                "get_current_weather",
                "Get the current weather conditions at a place.",
                &[
                    ("location", "string", "City or latitude,longitude.", true),
                    ("units", "string", "metric or imperial.", false),
                ],
            ),
            (
                "get_alerts",
                "Get active severe weather alerts for a region.",
                &[("region", "string", "State or region code.", true)],
            ),
            (
                "get_air_quality",
                "Get the air quality index and pollutants at a place.",
                &[("location", "string", "City.", true)],
            ),
            (
                "historical_weather",
                "Get past weather for a place and date.",
                &[
                    ("location", "string", "City.", true),
                    ("date", "string", "YYYY-MM-DD.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "calendly",
        product: "Calendly",
        entities: &[
            e("event type", "event types", "lg", &[]),
            e("scheduled event", "scheduled events", "lg", &[]),
        ],
        extras: &[
            (
                "create_scheduling_link",
                "Create a single-use Calendly scheduling link for an event type.",
                &[("event_type", "string", "Event type URI.", true)],
            ),
            (
                "cancel_event",
                "Cancel a scheduled Calendly event.",
                &[
                    ("event_uuid", "string", "The event.", true),
                    ("reason", "string", "Why.", false),
                ],
            ),
            (
                "list_invitees",
                "List the invitees of a Calendly event.",
                &[("event_uuid", "string", "The event.", true)],
            ),
        ],
    },
    Domain {
        server: "okta",
        product: "Okta",
        entities: &[
            e(
                "user",
                "users",
                "lgcus",
                &[
                    ("email", "string", "Login email."),
                    ("first_name", "string", "First name."),
                    ("last_name", "string", "Last name."),
                ],
            ),
            e(
                "group",
                "groups",
                "lgc",
                &[("name", "string", "Group name.")],
            ),
        ],
        extras: &[
            (
                "deactivate_user",
                "Deactivate an Okta user so they can no longer sign in.",
                &[("user_id", "string", "The user.", true)],
            ),
            (
                "reset_password",
                "Send an Okta password reset to a user.",
                &[("user_id", "string", "The user.", true)],
            ),
            (
                "add_user_to_group",
                "Add an Okta user to a group.",
                &[
                    ("user_id", "string", "The user.", true),
                    ("group_id", "string", "The group.", true),
                ],
            ),
            (
                "list_user_apps",
                "List the applications assigned to an Okta user.",
                &[("user_id", "string", "The user.", true)],
            ),
        ],
    },
    Domain {
        server: "bitbucket",
        product: "Bitbucket",
        entities: &[
            e(
                "repository",
                "repositories",
                "lgc",
                &[
                    ("workspace", "string", "Workspace."),
                    ("name", "string", "Repository name."),
                    ("is_private", "boolean", "Private."),
                ],
            ),
            e(
                "pull request",
                "pull requests",
                "lgc",
                &[
                    ("repo", "string", "Repository."),
                    ("title", "string", "Title."),
                    ("source_branch", "string", "From."),
                    ("destination_branch", "string", "Into."),
                ],
            ),
        ],
        extras: &[
            (
                "merge_pull_request",
                "Merge a Bitbucket pull request.",
                &[
                    ("repo", "string", "Repository.", true),
                    ("pr_id", "integer", "Pull request.", true),
                ],
            ),
            (
                "list_pipelines",
                "List the Bitbucket Pipelines runs of a repository.",
                &[("repo", "string", "Repository.", true)],
            ),
            (
                "comment_on_pull_request",
                "Comment on a Bitbucket pull request.",
                &[
                    ("repo", "string", "Repository.", true),
                    ("pr_id", "integer", "Pull request.", true),
                    ("content", "string", "Comment.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "npm-registry",
        product: "the npm registry",
        entities: &[],
        extras: &[
            (
                "search_packages",
                "Search the npm registry for packages.",
                &[
                    ("text", "string", "Words.", true),
                    ("size", "integer", "How many.", false),
                ],
            ),
            (
                "get_package",
                "Get an npm package's metadata: versions, description, maintainers.",
                &[("name", "string", "Package name.", true)],
            ),
            (
                "get_downloads",
                "Get the download counts of an npm package.",
                &[
                    ("name", "string", "Package.", true),
                    (
                        "period",
                        "string",
                        "last-day, last-week or last-month.",
                        false,
                    ),
                ],
            ),
            (
                "get_dependencies",
                "List the dependencies of an npm package version.",
                &[
                    ("name", "string", "Package.", true),
                    ("version", "string", "Version.", false),
                ],
            ),
        ],
    },
    Domain {
        server: "wikipedia",
        product: "Wikipedia",
        entities: &[],
        extras: &[
            (
                "search_articles",
                "Search Wikipedia articles by title and text.",
                &[
                    ("query", "string", "Words.", true),
                    ("language", "string", "Language code.", false),
                ],
            ),
            (
                "get_article",
                "Get the text of a Wikipedia article.",
                &[("title", "string", "Article title.", true)],
            ),
            (
                "get_summary",
                "Get the short summary of a Wikipedia article.",
                &[("title", "string", "Article title.", true)],
            ),
        ],
    },
    Domain {
        server: "arxiv",
        product: "arXiv",
        entities: &[],
        extras: &[
            (
                "search_papers",
                "Search arXiv for papers by words, author or category.",
                &[
                    ("query", "string", "Search terms.", true),
                    ("max_results", "integer", "How many.", false),
                ],
            ),
            (
                "get_paper",
                "Get an arXiv paper's abstract, authors and links.",
                &[("arxiv_id", "string", "Id such as 2401.01234.", true)],
            ),
            (
                "download_pdf",
                "Download the PDF of an arXiv paper.",
                &[("arxiv_id", "string", "Id.", true)],
            ),
        ],
    },
    Domain {
        server: "todoist",
        product: "Todoist",
        entities: &[
            e(
                "task",
                "tasks",
                "lgcud",
                &[
                    ("content", "string", "What to do."),
                    ("due_string", "string", "Due, in words: tomorrow at 5pm."),
                    ("priority", "integer", "1 (normal) to 4 (urgent)."),
                ],
            ),
            e(
                "project",
                "projects",
                "lc",
                &[("name", "string", "Project name.")],
            ),
        ],
        extras: &[(
            "close_task",
            "Complete a Todoist task.",
            &[("task_id", "string", "The task.", true)],
        )],
    },
    Domain {
        server: "github-actions",
        product: "GitHub Actions",
        entities: &[e("workflow", "workflows", "lg", &[])],
        extras: &[
            (
                "list_workflow_runs",
                "List the runs of a GitHub Actions workflow.",
                &[
                    ("owner", "string", "Owner.", true),
                    ("repo", "string", "Repository.", true),
                    ("workflow", "string", "Workflow file or id.", false),
                ],
            ),
            (
                "rerun_workflow",
                "Re-run a GitHub Actions workflow run.",
                &[
                    ("owner", "string", "Owner.", true),
                    ("repo", "string", "Repository.", true),
                    ("run_id", "integer", "The run.", true),
                ],
            ),
            (
                "get_job_logs",
                "Download the logs of a GitHub Actions job.",
                &[
                    ("owner", "string", "Owner.", true),
                    ("repo", "string", "Repository.", true),
                    ("job_id", "integer", "The job.", true),
                ],
            ),
            (
                "dispatch_workflow",
                "Trigger a GitHub Actions workflow with workflow_dispatch.",
                &[
                    ("owner", "string", "Owner.", true),
                    ("repo", "string", "Repository.", true),
                    ("workflow", "string", "Workflow file.", true),
                    ("ref", "string", "Branch.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "mysql",
        product: "MySQL",
        entities: &[],
        extras: &[
            (
                "mysql_query",
                "Run a read-only SQL query on the MySQL database.",
                &[("sql", "string", "SELECT statement.", true)],
            ),
            (
                "mysql_execute",
                "Run an INSERT, UPDATE or DELETE statement on the MySQL database.",
                &[("sql", "string", "Statement.", true)],
            ),
            (
                "mysql_list_tables",
                "List the tables of the MySQL database.",
                &[],
            ),
            (
                "mysql_describe_table",
                "Show the columns of a MySQL table.",
                &[("table", "string", "Table.", true)],
            ),
        ],
    },
    Domain {
        server: "translate",
        product: "the translation service",
        entities: &[],
        extras: &[
            (
                "translate_text",
                "Translate text into another language.",
                &[
                    ("text", "string", "Text.", true),
                    ("target_language", "string", "Language code, e.g. de.", true),
                    ("source_language", "string", "Detected if absent.", false),
                ],
            ),
            (
                "detect_language",
                "Detect the language of a text.",
                &[("text", "string", "Text.", true)],
            ),
            (
                "list_languages",
                "List the languages the translation service supports.",
                &[],
            ),
        ],
    },
    Domain {
        server: "google-sheets",
        product: "Google Sheets",
        entities: &[e(
            "spreadsheet",
            "spreadsheets",
            "lgc",
            &[
                ("title", "string", "Spreadsheet title."),
                ("sheets", "array", "Names of its tabs."),
            ],
        )],
        extras: &[
            (
                "read_range",
                "Read the cell values of a range of a Google Sheets spreadsheet, e.g. Sheet1!A1:D20.",
                &[
                    ("spreadsheet_id", "string", "The spreadsheet.", true),
                    ("range", "string", "A1 range.", true),
                ],
            ),
            (
                "write_range",
                "Write values into a range of a Google Sheets spreadsheet.",
                &[
                    ("spreadsheet_id", "string", "The spreadsheet.", true),
                    ("range", "string", "A1 range.", true),
                    ("values", "array", "Rows of values.", true),
                ],
            ),
            (
                "append_rows",
                "Append rows after the last row of a Google Sheets table.",
                &[
                    ("spreadsheet_id", "string", "The spreadsheet.", true),
                    ("range", "string", "The table.", true),
                    ("values", "array", "Rows.", true),
                ],
            ),
            (
                "add_sheet",
                "Add a tab to a Google Sheets spreadsheet.",
                &[
                    ("spreadsheet_id", "string", "The spreadsheet.", true),
                    ("title", "string", "Tab name.", true),
                ],
            ),
            (
                "clear_range",
                "Clear the values of a range in Google Sheets.",
                &[
                    ("spreadsheet_id", "string", "The spreadsheet.", true),
                    ("range", "string", "A1 range.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "google-docs",
        product: "Google Docs",
        entities: &[e(
            "document",
            "documents",
            "gc",
            &[("title", "string", "Document title.")],
        )],
        extras: &[
            (
                "insert_text",
                "Insert text into a Google Docs document at a position.",
                &[
                    ("document_id", "string", "The document.", true),
                    ("text", "string", "Text.", true),
                    ("index", "integer", "Where; the end if absent.", false),
                ],
            ),
            (
                "replace_text",
                "Replace every occurrence of a text in a Google Docs document.",
                &[
                    ("document_id", "string", "The document.", true),
                    ("find", "string", "Text to find.", true),
                    ("replace", "string", "Replacement.", true),
                ],
            ),
            (
                "export_document",
                "Export a Google Docs document as PDF, DOCX or plain text.",
                &[
                    ("document_id", "string", "The document.", true),
                    ("format", "string", "pdf, docx or txt.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "jenkins",
        product: "Jenkins",
        entities: &[e(
            "job",
            "jobs",
            "lgc",
            &[
                ("name", "string", "Job name."),
                ("config_xml", "string", "Job configuration."),
            ],
        )],
        extras: &[
            (
                "trigger_build",
                "Start a build of a Jenkins job, with parameters.",
                &[
                    ("job", "string", "Job name.", true),
                    ("parameters", "object", "Build parameters.", false),
                ],
            ),
            (
                "get_build_status",
                "Get the status and result of a Jenkins build.",
                &[
                    ("job", "string", "Job name.", true),
                    (
                        "build_number",
                        "integer",
                        "Build; the last if absent.",
                        false,
                    ),
                ],
            ),
            (
                "get_console_output",
                "Get the console log of a Jenkins build.",
                &[
                    ("job", "string", "Job name.", true),
                    ("build_number", "integer", "Build.", true),
                ],
            ),
            (
                "abort_build",
                "Abort a running Jenkins build.",
                &[
                    ("job", "string", "Job name.", true),
                    ("build_number", "integer", "Build.", true),
                ],
            ),
            (
                "list_build_queue",
                "List the builds waiting in the Jenkins queue.",
                &[],
            ),
        ],
    },
    Domain {
        server: "kafka",
        product: "Kafka",
        entities: &[e(
            "topic",
            "topics",
            "lgcd",
            &[
                ("name", "string", "Topic name."),
                ("partitions", "integer", "Partitions."),
                ("replication_factor", "integer", "Replicas."),
            ],
        )],
        extras: &[
            (
                "produce_message",
                "Publish a message to a Kafka topic.",
                &[
                    ("topic", "string", "Topic.", true),
                    ("value", "string", "Message value.", true),
                    ("key", "string", "Message key.", false),
                ],
            ),
            (
                "consume_messages",
                "Read messages from a Kafka topic from an offset.",
                &[
                    ("topic", "string", "Topic.", true),
                    ("offset", "string", "earliest, latest or a number.", false),
                    ("max_messages", "integer", "How many.", false),
                ],
            ),
            (
                "list_consumer_groups",
                "List Kafka consumer groups and their lag.",
                &[],
            ),
            (
                "reset_offsets",
                "Reset a Kafka consumer group's offsets on a topic.",
                &[
                    ("group", "string", "Consumer group.", true),
                    ("topic", "string", "Topic.", true),
                    ("to", "string", "earliest, latest or a timestamp.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "rabbitmq",
        product: "RabbitMQ",
        entities: &[
            e(
                "queue",
                "queues",
                "lgcd",
                &[
                    ("name", "string", "Queue name."),
                    ("durable", "boolean", "Survives a restart."),
                ],
            ),
            e(
                "exchange",
                "exchanges",
                "lc",
                &[
                    ("name", "string", "Exchange name."),
                    ("type", "string", "direct, topic, fanout or headers."),
                ],
            ),
        ],
        extras: &[
            (
                "publish_message",
                "Publish a message to a RabbitMQ exchange.",
                &[
                    ("exchange", "string", "Exchange.", true),
                    ("routing_key", "string", "Routing key.", true),
                    ("payload", "string", "Body.", true),
                ],
            ),
            (
                "purge_queue",
                "Remove every message from a RabbitMQ queue.",
                &[("name", "string", "Queue.", true)],
            ),
        ],
    },
    Domain {
        server: "aws-ec2",
        product: "Amazon EC2",
        entities: &[e(
            "instance",
            "instances",
            "lgc",
            &[
                ("image_id", "string", "AMI id."),
                ("instance_type", "string", "e.g. t3.micro."),
                ("key_name", "string", "SSH key pair."),
            ],
        )],
        extras: &[
            (
                "start_instances",
                "Start stopped EC2 instances.",
                &[("instance_ids", "array", "Instances.", true)],
            ),
            (
                "stop_instances",
                "Stop running EC2 instances.",
                &[("instance_ids", "array", "Instances.", true)],
            ),
            (
                "terminate_instances",
                "Terminate EC2 instances; their disks are deleted.",
                &[("instance_ids", "array", "Instances.", true)],
            ),
            (
                "describe_security_groups",
                "List EC2 security groups and their rules.",
                &[("group_ids", "array", "Groups; all if absent.", false)],
            ),
            (
                "get_console_output",
                "Get the boot console output of an EC2 instance.",
                &[("instance_id", "string", "Instance.", true)],
            ),
        ],
    },
    Domain {
        server: "aws-lambda",
        product: "AWS Lambda",
        entities: &[e(
            "function",
            "functions",
            "lgcud",
            &[
                ("function_name", "string", "Name."),
                ("runtime", "string", "e.g. python3.12."),
                ("handler", "string", "Entry point."),
                ("memory_size", "integer", "MB."),
            ],
        )],
        extras: &[
            (
                "invoke_function",
                "Invoke an AWS Lambda function with a JSON payload and return its answer.",
                &[
                    ("function_name", "string", "Function.", true),
                    ("payload", "object", "Event.", false),
                ],
            ),
            (
                "get_function_logs",
                "Get recent CloudWatch logs of an AWS Lambda function.",
                &[
                    ("function_name", "string", "Function.", true),
                    ("minutes", "integer", "How far back.", false),
                ],
            ),
        ],
    },
    Domain {
        server: "azure",
        product: "Azure",
        entities: &[
            e(
                "resource group",
                "resource groups",
                "lcd",
                &[
                    ("name", "string", "Name."),
                    ("location", "string", "Region."),
                ],
            ),
            e("virtual machine", "virtual machines", "lg", &[]),
            e("storage account", "storage accounts", "lg", &[]),
        ],
        extras: &[
            (
                "restart_vm",
                "Restart an Azure virtual machine.",
                &[
                    ("resource_group", "string", "Group.", true),
                    ("vm_name", "string", "VM.", true),
                ],
            ),
            (
                "query_log_analytics",
                "Run a KQL query on an Azure Log Analytics workspace.",
                &[
                    ("workspace_id", "string", "Workspace.", true),
                    ("query", "string", "KQL.", true),
                ],
            ),
            (
                "get_cost",
                "Get the Azure cost of a subscription for a month.",
                &[("month", "string", "YYYY-MM.", true)],
            ),
        ],
    },
    Domain {
        server: "heroku",
        product: "Heroku",
        entities: &[e(
            "app",
            "apps",
            "lgcd",
            &[
                ("name", "string", "App name."),
                ("region", "string", "us or eu."),
            ],
        )],
        extras: &[
            (
                "scale_dynos",
                "Scale the dynos of a Heroku app.",
                &[
                    ("app", "string", "App.", true),
                    ("type", "string", "Process type, e.g. web.", true),
                    ("quantity", "integer", "How many.", true),
                ],
            ),
            (
                "restart_app",
                "Restart every dyno of a Heroku app.",
                &[("app", "string", "App.", true)],
            ),
            (
                "get_app_logs",
                "Get recent log lines of a Heroku app.",
                &[
                    ("app", "string", "App.", true),
                    ("lines", "integer", "How many.", false),
                ],
            ),
            (
                "set_config_vars",
                "Set config vars of a Heroku app.",
                &[
                    ("app", "string", "App.", true),
                    ("vars", "object", "Names and values.", true),
                ],
            ),
            (
                "list_releases",
                "List the releases of a Heroku app.",
                &[("app", "string", "App.", true)],
            ),
            (
                "rollback_release",
                "Roll a Heroku app back to an earlier release.",
                &[
                    ("app", "string", "App.", true),
                    ("release", "string", "Release id or version.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "firebase",
        product: "Firebase",
        entities: &[e(
            "document",
            "Firestore documents",
            "gcud",
            &[
                ("collection", "string", "Collection path."),
                ("data", "object", "Fields."),
            ],
        )],
        extras: &[
            (
                "query_collection",
                "Query a Firestore collection with where clauses.",
                &[
                    ("collection", "string", "Collection path.", true),
                    ("where", "array", "Filters.", false),
                ],
            ),
            (
                "send_push_notification",
                "Send a push notification with Firebase Cloud Messaging.",
                &[
                    ("token", "string", "Device token or topic.", true),
                    ("title", "string", "Title.", true),
                    ("body", "string", "Text.", true),
                ],
            ),
            (
                "list_auth_users",
                "List the users of Firebase Authentication.",
                &[("max_results", "integer", "How many.", false)],
            ),
        ],
    },
    Domain {
        server: "pinecone",
        product: "Pinecone",
        entities: &[e(
            "index",
            "vector indexes",
            "lgcd",
            &[
                ("name", "string", "Index name."),
                ("dimension", "integer", "Vector size."),
                ("metric", "string", "cosine, euclidean or dotproduct."),
            ],
        )],
        extras: &[
            (
                "upsert_vectors",
                "Insert or update vectors in a Pinecone index.",
                &[
                    ("index", "string", "Index.", true),
                    ("vectors", "array", "Vectors with ids and metadata.", true),
                ],
            ),
            (
                "query_vectors",
                "Find the nearest vectors to a query vector in a Pinecone index.",
                &[
                    ("index", "string", "Index.", true),
                    ("vector", "array", "Query vector.", true),
                    ("top_k", "integer", "How many.", false),
                ],
            ),
        ],
    },
    Domain {
        server: "telegram",
        product: "Telegram",
        entities: &[e("chat", "chats", "lg", &[])],
        extras: &[
            (
                "send_message",
                "Send a Telegram message to a chat or user.",
                &[
                    ("chat_id", "string", "Chat or @username.", true),
                    ("text", "string", "Message.", true),
                ],
            ),
            (
                "send_photo",
                "Send a photo to a Telegram chat.",
                &[
                    ("chat_id", "string", "Chat.", true),
                    ("photo_url", "string", "Image URL.", true),
                    ("caption", "string", "Caption.", false),
                ],
            ),
            (
                "get_updates",
                "Get new messages sent to the Telegram bot.",
                &[("offset", "integer", "First update id.", false)],
            ),
            (
                "pin_message",
                "Pin a message in a Telegram chat.",
                &[
                    ("chat_id", "string", "Chat.", true),
                    ("message_id", "integer", "Message.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "x-twitter",
        product: "X (Twitter)",
        entities: &[e(
            "post",
            "posts",
            "gcd",
            &[
                ("text", "string", "Post text, up to 280 characters."),
                ("reply_to", "string", "Post replied to."),
            ],
        )],
        extras: &[
            (
                "search_posts",
                "Search recent posts on X (Twitter).",
                &[
                    ("query", "string", "Search query.", true),
                    ("max_results", "integer", "How many.", false),
                ],
            ),
            (
                "get_user_timeline",
                "Get a user's latest posts on X.",
                &[("username", "string", "Handle without @.", true)],
            ),
            (
                "like_post",
                "Like a post on X.",
                &[("post_id", "string", "Post.", true)],
            ),
            (
                "get_mentions",
                "Get recent posts on X that mention the account.",
                &[],
            ),
        ],
    },
    Domain {
        server: "reddit",
        product: "Reddit",
        entities: &[e(
            "post",
            "posts",
            "gc",
            &[
                ("subreddit", "string", "Subreddit."),
                ("title", "string", "Title."),
                ("text", "string", "Body."),
            ],
        )],
        extras: &[
            (
                "search_reddit",
                "Search Reddit posts.",
                &[
                    ("query", "string", "Words.", true),
                    ("subreddit", "string", "Only this subreddit.", false),
                ],
            ),
            (
                "get_subreddit_top",
                "Get the top posts of a subreddit.",
                &[
                    ("subreddit", "string", "Subreddit.", true),
                    ("time", "string", "day, week, month, year or all.", false),
                ],
            ),
            (
                "get_comments",
                "Read the comments of a Reddit post.",
                &[("post_id", "string", "Post.", true)],
            ),
        ],
    },
    Domain {
        server: "travel",
        product: "the travel booking service",
        entities: &[e("booking", "bookings", "lgd", &[])],
        extras: &[
            (
                "search_flights",
                "Search flights between two airports on a date, cheapest first.",
                &[
                    ("origin", "string", "IATA code, e.g. LHR.", true),
                    ("destination", "string", "IATA code.", true),
                    ("date", "string", "YYYY-MM-DD.", true),
                    ("passengers", "integer", "How many.", false),
                ],
            ),
            (
                "search_hotels",
                "Search hotels in a city for given dates.",
                &[
                    ("city", "string", "City.", true),
                    ("check_in", "string", "Date.", true),
                    ("check_out", "string", "Date.", true),
                ],
            ),
            (
                "book_flight",
                "Book a flight offer for passengers.",
                &[
                    ("offer_id", "string", "The offer.", true),
                    ("passengers", "array", "Names and birth dates.", true),
                ],
            ),
            (
                "get_flight_status",
                "Get the live status of a flight by its number.",
                &[
                    ("flight_number", "string", "e.g. BA117.", true),
                    ("date", "string", "Date.", false),
                ],
            ),
        ],
    },
    Domain {
        server: "home-assistant",
        product: "Home Assistant",
        entities: &[e("entity", "entities", "lg", &[])],
        extras: &[
            (
                "turn_on",
                "Turn on a light, switch or other device in Home Assistant.",
                &[
                    ("entity_id", "string", "e.g. light.kitchen.", true),
                    ("brightness", "integer", "0-255 for lights.", false),
                ],
            ),
            (
                "turn_off",
                "Turn off a device in Home Assistant.",
                &[("entity_id", "string", "e.g. switch.heater.", true)],
            ),
            (
                "set_temperature",
                "Set a Home Assistant thermostat's target temperature.",
                &[
                    ("entity_id", "string", "Climate entity.", true),
                    ("temperature", "number", "Degrees.", true),
                ],
            ),
            (
                "run_automation",
                "Trigger a Home Assistant automation or script.",
                &[("entity_id", "string", "automation.x or script.y.", true)],
            ),
            (
                "get_history",
                "Get the state history of a Home Assistant entity.",
                &[
                    ("entity_id", "string", "Entity.", true),
                    ("hours", "integer", "How far back.", false),
                ],
            ),
        ],
    },
    Domain {
        server: "docusign",
        product: "DocuSign",
        entities: &[e(
            "envelope",
            "envelopes",
            "lgc",
            &[
                ("document_base64", "string", "The PDF."),
                ("signers", "array", "Names and emails."),
                ("subject", "string", "Email subject."),
            ],
        )],
        extras: &[
            (
                "void_envelope",
                "Void a DocuSign envelope that is not yet completed.",
                &[
                    ("envelope_id", "string", "Envelope.", true),
                    ("reason", "string", "Why.", true),
                ],
            ),
            (
                "download_signed_document",
                "Download the signed documents of a completed DocuSign envelope.",
                &[("envelope_id", "string", "Envelope.", true)],
            ),
            (
                "send_reminder",
                "Remind DocuSign signers who have not signed yet.",
                &[("envelope_id", "string", "Envelope.", true)],
            ),
        ],
    },
    Domain {
        server: "greenhouse",
        product: "Greenhouse",
        entities: &[
            e(
                "candidate",
                "candidates",
                "lgcus",
                &[
                    ("first_name", "string", "First name."),
                    ("last_name", "string", "Last name."),
                    ("email", "string", "Email."),
                ],
            ),
            e("job", "job openings", "lg", &[]),
            e("application", "applications", "lg", &[]),
        ],
        extras: &[
            (
                "schedule_interview",
                "Schedule an interview for a Greenhouse application.",
                &[
                    ("application_id", "string", "Application.", true),
                    ("interviewers", "array", "Emails.", true),
                    ("start", "string", "When.", true),
                ],
            ),
            (
                "advance_application",
                "Move a Greenhouse application to the next stage.",
                &[("application_id", "string", "Application.", true)],
            ),
            (
                "reject_application",
                "Reject a Greenhouse application with a reason.",
                &[
                    ("application_id", "string", "Application.", true),
                    ("reason", "string", "Why.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "expensify",
        product: "Expensify",
        entities: &[
            e(
                "expense",
                "expenses",
                "lgcud",
                &[
                    ("merchant", "string", "Merchant."),
                    ("amount", "number", "Amount."),
                    ("currency", "string", "Currency."),
                    ("category", "string", "Category."),
                    ("date", "string", "Date."),
                ],
            ),
            e(
                "report",
                "expense reports",
                "lgc",
                &[("title", "string", "Report title.")],
            ),
        ],
        extras: &[
            (
                "submit_report",
                "Submit an Expensify expense report for approval.",
                &[("report_id", "string", "Report.", true)],
            ),
            (
                "attach_receipt",
                "Attach a receipt image to an Expensify expense.",
                &[
                    ("expense_id", "string", "Expense.", true),
                    ("image_base64", "string", "Receipt.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "miro",
        product: "Miro",
        entities: &[
            e(
                "board",
                "boards",
                "lgc",
                &[
                    ("name", "string", "Board name."),
                    ("description", "string", "What it is for."),
                ],
            ),
            e(
                "sticky note",
                "sticky notes",
                "lcd",
                &[
                    ("board_id", "string", "Board."),
                    ("content", "string", "Text."),
                    ("color", "string", "Color."),
                ],
            ),
        ],
        extras: &[(
            "share_board",
            "Invite people to a Miro board.",
            &[
                ("board_id", "string", "Board.", true),
                ("emails", "array", "Who.", true),
            ],
        )],
    },
    Domain {
        server: "new-relic",
        product: "New Relic",
        entities: &[e(
            "alert policy",
            "alert policies",
            "lgc",
            &[
                ("name", "string", "Policy name."),
                (
                    "incident_preference",
                    "string",
                    "PER_POLICY or PER_CONDITION.",
                ),
            ],
        )],
        extras: &[
            (
                "run_nrql",
                "Run an NRQL query in New Relic.",
                &[(
                    "query",
                    "string",
                    "NRQL, e.g. SELECT count(*) FROM Transaction.",
                    true,
                )],
            ),
            (
                "list_applications",
                "List the APM applications New Relic monitors, with their health.",
                &[],
            ),
            (
                "get_error_rate",
                "Get an application's error rate over time from New Relic.",
                &[
                    ("app_id", "string", "Application.", true),
                    ("since", "string", "e.g. 1 hour ago.", false),
                ],
            ),
            (
                "record_deployment",
                "Record a deployment marker for a New Relic application.",
                &[
                    ("app_id", "string", "Application.", true),
                    ("revision", "string", "Version or commit.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "snyk",
        product: "Snyk",
        entities: &[e("project", "projects", "lg", &[])],
        extras: &[
            (
                "test_dependencies",
                "Test a project's dependencies for known vulnerabilities with Snyk.",
                &[(
                    "manifest",
                    "string",
                    "package.json, requirements.txt or similar, as text.",
                    true,
                )],
            ),
            (
                "list_issues",
                "List the Snyk vulnerability and license issues of a project.",
                &[
                    ("project_id", "string", "Project.", true),
                    (
                        "severity",
                        "string",
                        "low, medium, high or critical.",
                        false,
                    ),
                ],
            ),
            (
                "ignore_issue",
                "Ignore a Snyk issue for a while, with a reason.",
                &[
                    ("project_id", "string", "Project.", true),
                    ("issue_id", "string", "Issue.", true),
                    ("reason", "string", "Why.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "sonarqube",
        product: "SonarQube",
        entities: &[e(
            "project",
            "projects",
            "lgc",
            &[
                ("key", "string", "Project key."),
                ("name", "string", "Name."),
            ],
        )],
        extras: &[
            (
                "get_quality_gate",
                "Get the quality gate status of a SonarQube project.",
                &[("project_key", "string", "Project.", true)],
            ),
            (
                "search_code_issues",
                "Search SonarQube code smells, bugs and vulnerabilities.",
                &[
                    ("project_key", "string", "Project.", true),
                    (
                        "types",
                        "string",
                        "CODE_SMELL, BUG or VULNERABILITY.",
                        false,
                    ),
                ],
            ),
            (
                "get_coverage",
                "Get the test coverage of a SonarQube project.",
                &[("project_key", "string", "Project.", true)],
            ),
        ],
    },
    Domain {
        server: "auth0",
        product: "Auth0",
        entities: &[
            e(
                "user",
                "users",
                "lgcud",
                &[
                    ("email", "string", "Email."),
                    ("connection", "string", "Database connection."),
                    ("password", "string", "Initial password."),
                ],
            ),
            e(
                "application",
                "applications",
                "lgc",
                &[
                    ("name", "string", "Name."),
                    ("app_type", "string", "spa, native or regular_web."),
                ],
            ),
            e("role", "roles", "lc", &[("name", "string", "Role name.")]),
        ],
        extras: &[
            (
                "assign_roles",
                "Assign Auth0 roles to a user.",
                &[
                    ("user_id", "string", "User.", true),
                    ("roles", "array", "Role ids.", true),
                ],
            ),
            (
                "block_user",
                "Block an Auth0 user from logging in.",
                &[("user_id", "string", "User.", true)],
            ),
            (
                "get_login_logs",
                "Get recent Auth0 login events, failed ones included.",
                &[("user_id", "string", "Only this user.", false)],
            ),
        ],
    },
    Domain {
        server: "mattermost",
        product: "Mattermost",
        entities: &[e(
            "channel",
            "channels",
            "lgc",
            &[
                ("team_id", "string", "Team."),
                ("name", "string", "Channel name."),
                ("purpose", "string", "Purpose."),
            ],
        )],
        extras: &[
            (
                "post_message",
                "Post a message to a Mattermost channel.",
                &[
                    ("channel_id", "string", "Channel.", true),
                    ("message", "string", "Text, Markdown allowed.", true),
                ],
            ),
            (
                "get_posts",
                "Read recent posts of a Mattermost channel.",
                &[("channel_id", "string", "Channel.", true)],
            ),
            (
                "search_posts",
                "Search Mattermost posts.",
                &[("terms", "string", "Words.", true)],
            ),
        ],
    },
    Domain {
        server: "whatsapp",
        product: "WhatsApp Business",
        entities: &[e(
            "template",
            "message templates",
            "lc",
            &[
                ("name", "string", "Template name."),
                ("language", "string", "Language."),
                ("body", "string", "Template text."),
            ],
        )],
        extras: &[
            (
                "send_message",
                "Send a WhatsApp message to a phone number.",
                &[
                    ("to", "string", "Phone number with country code.", true),
                    ("text", "string", "Message.", true),
                ],
            ),
            (
                "send_template",
                "Send an approved WhatsApp template message.",
                &[
                    ("to", "string", "Phone number.", true),
                    ("template", "string", "Template name.", true),
                ],
            ),
            (
                "mark_as_read",
                "Mark a received WhatsApp message as read.",
                &[("message_id", "string", "Message.", true)],
            ),
        ],
    },
    Domain {
        server: "linkedin",
        product: "LinkedIn",
        entities: &[e(
            "post",
            "posts",
            "cd",
            &[
                ("text", "string", "Post text."),
                ("visibility", "string", "PUBLIC or CONNECTIONS."),
            ],
        )],
        extras: &[
            (
                "get_profile",
                "Get a LinkedIn member's public profile: headline, positions, education.",
                &[("profile_url", "string", "Profile URL.", true)],
            ),
            (
                "search_people",
                "Search LinkedIn for people by name, title or company.",
                &[("keywords", "string", "Words.", true)],
            ),
            (
                "search_jobs",
                "Search LinkedIn job postings.",
                &[
                    ("keywords", "string", "Job title or skills.", true),
                    ("location", "string", "Where.", false),
                ],
            ),
        ],
    },
    Domain {
        server: "hackernews",
        product: "Hacker News",
        entities: &[],
        extras: &[
            (
                "top_stories",
                "Get the current top stories on Hacker News.",
                &[("limit", "integer", "How many.", false)],
            ),
            (
                "get_story",
                "Get a Hacker News story and its comments.",
                &[("id", "integer", "Story id.", true)],
            ),
            (
                "search_stories",
                "Search Hacker News stories (Algolia).",
                &[("query", "string", "Words.", true)],
            ),
        ],
    },
    Domain {
        server: "yelp",
        product: "Yelp",
        entities: &[e("business", "businesses", "gs", &[])],
        extras: &[
            (
                "get_reviews",
                "Get reviews of a business on Yelp.",
                &[("business_id", "string", "Business.", true)],
            ),
            (
                "search_restaurants",
                "Find restaurants near a place on Yelp, by cuisine and price.",
                &[
                    ("location", "string", "Address or city.", true),
                    ("cuisine", "string", "e.g. thai.", false),
                    ("price", "string", "1 to 4.", false),
                ],
            ),
        ],
    },
    Domain {
        server: "digitalocean",
        product: "DigitalOcean",
        entities: &[
            e(
                "droplet",
                "droplets",
                "lgcd",
                &[
                    ("name", "string", "Droplet name."),
                    ("region", "string", "e.g. ams3."),
                    ("size", "string", "e.g. s-1vcpu-1gb."),
                    ("image", "string", "e.g. ubuntu-24-04-x64."),
                ],
            ),
            e(
                "database cluster",
                "database clusters",
                "lgc",
                &[
                    ("engine", "string", "pg, mysql or redis."),
                    ("size", "string", "Node size."),
                ],
            ),
        ],
        extras: &[
            (
                "reboot_droplet",
                "Reboot a DigitalOcean droplet.",
                &[("droplet_id", "integer", "Droplet.", true)],
            ),
            (
                "snapshot_droplet",
                "Take a snapshot of a DigitalOcean droplet.",
                &[
                    ("droplet_id", "integer", "Droplet.", true),
                    ("name", "string", "Snapshot name.", false),
                ],
            ),
        ],
    },
    Domain {
        server: "netlify",
        product: "Netlify",
        entities: &[
            e(
                "site",
                "sites",
                "lgcd",
                &[
                    ("name", "string", "Site name."),
                    ("custom_domain", "string", "Domain."),
                ],
            ),
            e("deploy", "deploys", "lg", &[]),
        ],
        extras: &[
            (
                "deploy_site",
                "Deploy a folder to a Netlify site.",
                &[
                    ("site_id", "string", "Site.", true),
                    ("dir", "string", "Folder to deploy.", true),
                ],
            ),
            (
                "rollback_deploy",
                "Publish an earlier Netlify deploy again.",
                &[
                    ("site_id", "string", "Site.", true),
                    ("deploy_id", "string", "Deploy.", true),
                ],
            ),
            (
                "list_form_submissions",
                "List the submissions of a Netlify form.",
                &[("form_id", "string", "Form.", true)],
            ),
        ],
    },
    Domain {
        server: "rollbar",
        product: "Rollbar",
        entities: &[e(
            "item",
            "error items",
            "lgu",
            &[
                ("status", "string", "active, resolved, muted."),
                ("level", "string", "critical, error, warning."),
            ],
        )],
        extras: &[
            (
                "get_item_occurrences",
                "List the occurrences of a Rollbar error item, with stack traces.",
                &[("item_id", "integer", "Item.", true)],
            ),
            (
                "top_errors",
                "Get the most frequent Rollbar errors of the last hours.",
                &[("hours", "integer", "How far back.", false)],
            ),
        ],
    },
    Domain {
        server: "supabase",
        product: "Supabase",
        entities: &[e(
            "project",
            "projects",
            "lgc",
            &[
                ("name", "string", "Project name."),
                ("region", "string", "Region."),
            ],
        )],
        extras: &[
            (
                "execute_sql",
                "Run SQL on a Supabase project's Postgres database.",
                &[
                    ("project_id", "string", "Project.", true),
                    ("query", "string", "SQL.", true),
                ],
            ),
            (
                "apply_migration",
                "Apply a SQL migration to a Supabase project.",
                &[
                    ("project_id", "string", "Project.", true),
                    ("name", "string", "Migration name.", true),
                    ("query", "string", "SQL.", true),
                ],
            ),
            (
                "list_tables",
                "List the tables of a Supabase project's database.",
                &[
                    ("project_id", "string", "Project.", true),
                    ("schemas", "array", "Schemas.", false),
                ],
            ),
            (
                "get_logs",
                "Get logs of a Supabase service (api, postgres, auth, storage).",
                &[
                    ("project_id", "string", "Project.", true),
                    ("service", "string", "Service.", true),
                ],
            ),
            (
                "deploy_edge_function",
                "Deploy a Supabase Edge Function.",
                &[
                    ("project_id", "string", "Project.", true),
                    ("name", "string", "Function.", true),
                    ("code", "string", "TypeScript source.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "canva",
        product: "Canva",
        entities: &[e(
            "design",
            "designs",
            "lgc",
            &[
                ("title", "string", "Design title."),
                (
                    "design_type",
                    "string",
                    "presentation, poster, social post…",
                ),
            ],
        )],
        extras: &[
            (
                "export_design",
                "Export a Canva design as PDF or PNG.",
                &[
                    ("design_id", "string", "Design.", true),
                    ("format", "string", "pdf or png.", true),
                ],
            ),
            (
                "upload_asset",
                "Upload an image to the Canva asset library.",
                &[
                    ("name", "string", "Asset name.", true),
                    ("image_base64", "string", "Image.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "postmark",
        product: "Postmark",
        entities: &[e(
            "template",
            "email templates",
            "lgcd",
            &[
                ("name", "string", "Name."),
                ("subject", "string", "Subject."),
                ("html_body", "string", "HTML."),
            ],
        )],
        extras: &[
            (
                "send_email",
                "Send an email through Postmark.",
                &[
                    ("to", "string", "Recipient.", true),
                    ("subject", "string", "Subject.", true),
                    ("text_body", "string", "Body.", true),
                ],
            ),
            (
                "get_bounces",
                "List emails Postmark could not deliver.",
                &[("count", "integer", "How many.", false)],
            ),
            (
                "get_delivery_stats",
                "Get Postmark's delivery statistics.",
                &[],
            ),
        ],
    },
    Domain {
        server: "loom",
        product: "Loom",
        entities: &[e("video", "videos", "lgd", &[])],
        extras: &[
            (
                "get_video_transcript",
                "Get the transcript of a Loom video.",
                &[("video_id", "string", "Video.", true)],
            ),
            (
                "share_video",
                "Share a Loom video with people.",
                &[
                    ("video_id", "string", "Video.", true),
                    ("emails", "array", "Who.", true),
                ],
            ),
        ],
    },
    Domain {
        server: "gitea",
        product: "Gitea",
        entities: &[
            e(
                "repository",
                "repositories",
                "lgcd",
                &[
                    ("name", "string", "Name."),
                    ("private", "boolean", "Private."),
                ],
            ),
            e(
                "issue",
                "issues",
                "lgcu",
                &[
                    ("repo", "string", "owner/name."),
                    ("title", "string", "Title."),
                    ("body", "string", "Body."),
                ],
            ),
            e(
                "release",
                "releases",
                "lc",
                &[
                    ("repo", "string", "owner/name."),
                    ("tag_name", "string", "Tag."),
                    ("name", "string", "Title."),
                ],
            ),
        ],
        extras: &[],
    },
    Domain {
        server: "1password",
        product: "1Password",
        entities: &[e("vault", "vaults", "l", &[])],
        extras: &[
            (
                "get_item",
                "Get a login or secure note from a 1Password vault (the secret is shown to the person only).",
                &[
                    ("vault", "string", "Vault.", true),
                    ("item", "string", "Item title or id.", true),
                ],
            ),
            (
                "search_items",
                "Search 1Password items by title or URL.",
                &[("query", "string", "Words.", true)],
            ),
            (
                "generate_password",
                "Generate a strong random password with 1Password's generator.",
                &[
                    ("length", "integer", "Characters.", false),
                    ("symbols", "boolean", "Include symbols.", false),
                ],
            ),
            (
                "create_item",
                "Save a new login in a 1Password vault.",
                &[
                    ("vault", "string", "Vault.", true),
                    ("title", "string", "Title.", true),
                    ("username", "string", "User name.", true),
                    ("url", "string", "Website.", false),
                ],
            ),
        ],
    },
    Domain {
        server: "calculator",
        product: "the calculator",
        entities: &[],
        extras: &[
            (
                "calculate",
                "Evaluate an arithmetic expression exactly, e.g. (3.5 * 12) / 7.",
                &[("expression", "string", "The expression.", true)],
            ),
            (
                "convert_units",
                "Convert a quantity between units: length, weight, volume, temperature.",
                &[
                    ("value", "number", "Quantity.", true),
                    ("from", "string", "Unit, e.g. mi.", true),
                    ("to", "string", "Unit, e.g. km.", true),
                ],
            ),
            (
                "convert_currency",
                "Convert an amount between currencies at today's rate.",
                &[
                    ("amount", "number", "Amount.", true),
                    ("from", "string", "Currency code.", true),
                    ("to", "string", "Currency code.", true),
                ],
            ),
            (
                "statistics",
                "Mean, median, standard deviation and percentiles of a list of numbers.",
                &[("numbers", "array", "The numbers.", true)],
            ),
            (
                "date_difference",
                "Days, weeks and business days between two dates.",
                &[
                    ("from", "string", "YYYY-MM-DD.", true),
                    ("to", "string", "YYYY-MM-DD.", true),
                ],
            ),
        ],
    },
];
