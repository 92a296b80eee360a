//! Words for tool search: names split as people read them (`get_pull_request_files`,
//! `listPullRequests`, `browser-take-screenshot` → `get pull request files`…), the words
//! of a request that say nothing about a tool (`please`, `my`, `the`), and the words the
//! shape of a request's word implies (a URL is a web page). Stemming (`files`, `filed` →
//! `file`) is left to the index's tokenizer. No list of other words for what a word means
//! is kept: one written while looking at requests fits those requests only
//! (`bench/catalog/README.md` has the figures), and WordNet's did not lift the held-out ones.

/// Most words of one request that are searched for.
pub const MAX_QUERY_WORDS: usize = 32;
/// Longest word kept, in characters.
pub const MAX_WORD_CHARS: usize = 40;

/// `text` as lowercase words: split at anything that is not a letter or a digit, at a
/// lowercase-to-uppercase step (`pullRequest`) and between letters and digits (`v2`
/// stays one word; `ipv4` too: only a letter after digits starts a word).
pub fn split(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut prev: Option<char> = None;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            flush(&mut word, &mut words);
            prev = None;
            continue;
        }
        let step = prev.is_some_and(|p| {
            (p.is_lowercase() && c.is_uppercase()) || (p.is_numeric() && c.is_alphabetic())
        });
        if step {
            flush(&mut word, &mut words);
        }
        word.extend(c.to_lowercase());
        prev = Some(c);
    }
    flush(&mut word, &mut words);
    words
}

fn flush(word: &mut String, words: &mut Vec<String>) {
    if !word.is_empty() {
        if word.chars().count() <= MAX_WORD_CHARS {
            words.push(std::mem::take(word));
        } else {
            word.clear();
        }
    }
}

/// Words of a request that never tell one tool from another.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "anything",
    "are",
    "as",
    "at",
    "be",
    "been",
    "but",
    "by",
    "can",
    "could",
    "do",
    "does",
    "done",
    "everything",
    "for",
    "from",
    "give",
    "go",
    "got",
    "had",
    "has",
    "have",
    "hey",
    "how",
    "i",
    "if",
    "im",
    "in",
    "into",
    "is",
    "it",
    "its",
    "just",
    "let",
    "lets",
    "like",
    "ll",
    "me",
    "mine",
    "my",
    "need",
    "nothing",
    "of",
    "off",
    "ok",
    "on",
    "onto",
    "or",
    "our",
    "out",
    "over",
    "please",
    "pls",
    "re",
    "s",
    "saying",
    "should",
    "so",
    "some",
    "something",
    "t",
    "tell",
    "than",
    "that",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "things",
    "this",
    "those",
    "through",
    "to",
    "too",
    "up",
    "us",
    "ve",
    "via",
    "want",
    "was",
    "we",
    "were",
    "what",
    "whats",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whos",
    "why",
    "will",
    "with",
    "would",
    "yet",
    "you",
    "your",
];

/// Is this word one that says nothing about a tool?
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// File name endings that say a request is about a file.
const FILE_ENDINGS: &[&str] = &[
    "c", "cfg", "conf", "css", "csv", "doc", "docx", "gif", "go", "gz", "html", "ini", "java",
    "jpeg", "jpg", "js", "json", "log", "md", "mp3", "mp4", "pdf", "png", "py", "rb", "rs", "sh",
    "sql", "svg", "tar", "toml", "ts", "tsv", "txt", "wav", "webp", "xls", "xlsx", "xml", "yaml",
    "yml", "zip",
];
/// The endings of images and sounds, which tools call media.
const MEDIA_ENDINGS: &[&str] = &[
    "gif", "jpeg", "jpg", "mp3", "mp4", "png", "svg", "wav", "webp",
];

/// What the shape of a request's words says it is about, in words tools use: a URL is a
/// web page, a path or a file name is a file, two file names are several files, `#name`
/// is a channel, `name@host.tld` an email address.
pub fn implied_words(request: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    let mut files = 0;
    for token in request.split_whitespace() {
        let token = token.trim_matches(|c: char| ",;:!?()[]{}'\"`".contains(c));
        let ending = token
            .rsplit_once('.')
            .map(|(stem, e)| (stem, e.to_ascii_lowercase()));
        if token.contains("://") || token.starts_with("www.") {
            out.extend(["url", "page", "web"]);
        } else if token.starts_with('/') || token.starts_with("~/") || token.starts_with("./") {
            out.extend(["path", "file", "directory"]);
        } else if let Some((stem, e)) = ending.filter(|(stem, e)| {
            !stem.is_empty() && FILE_ENDINGS.contains(&e.as_str()) && !stem.contains('@')
        }) {
            let _ = stem;
            files += 1;
            out.push("file");
            if MEDIA_ENDINGS.contains(&e.as_str()) {
                out.extend(["image", "media"]);
            }
        } else if token.starts_with('#') && token[1..].starts_with(char::is_alphabetic) {
            out.push("channel");
        } else if is_time_of_day(token) {
            out.extend(["time", "timezone"]);
        } else if token.contains('@') && token.rsplit('@').next().is_some_and(|h| h.contains('.')) {
            out.push("email");
        }
    }
    if files > 1 {
        out.push("multiple");
    }
    out
}

/// `3pm`, `10:30`, `9:15am`: a time of day.
fn is_time_of_day(token: &str) -> bool {
    let lower = token.to_ascii_lowercase();
    let (clock, meridiem) = match lower.strip_suffix("am").or(lower.strip_suffix("pm")) {
        Some(clock) => (clock, true),
        None => (lower.as_str(), false),
    };
    let (hours, minutes) = clock.split_once(':').unwrap_or((clock, ""));
    let digits = |s: &str, n: std::ops::RangeInclusive<usize>| {
        n.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
    };
    digits(hours, 1..=2) && (digits(minutes, 2..=2) || (minutes.is_empty() && meridiem))
}

/// The words of a request worth searching for: split, stop words out, what the shape of
/// its words implies added ([`implied_words`]) when `shapes`, at most [`MAX_QUERY_WORDS`],
/// each once.
pub fn query_words(request: &str, shapes: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let implied: Vec<&str> = if shapes {
        implied_words(request)
    } else {
        Vec::new()
    };
    let implied = implied.into_iter().map(str::to_owned);
    for word in split(request).into_iter().chain(implied) {
        if is_stop_word(&word) || out.contains(&word) {
            continue;
        }
        out.push(word);
        if out.len() == MAX_QUERY_WORDS {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_as_people_read_them() {
        assert_eq!(
            split("get_pull_request_files"),
            ["get", "pull", "request", "files"]
        );
        assert_eq!(split("listPullRequests"), ["list", "pull", "requests"]);
        assert_eq!(
            split("browser-take-screenshot"),
            ["browser", "take", "screenshot"]
        );
        assert_eq!(
            split("What's in ~/Downloads?"),
            ["what", "s", "in", "downloads"]
        );
        assert_eq!(
            split("ipv4 and v2 and 3pm"),
            ["ipv4", "and", "v2", "and", "3", "pm"]
        );
        assert_eq!(split(&"x".repeat(41)), Vec::<String>::new());
    }

    #[test]
    fn the_lists_are_sorted_so_lookups_find_every_entry() {
        assert!(
            STOP_WORDS.windows(2).all(|w| w[0] < w[1]),
            "STOP_WORDS unsorted"
        );
    }

    #[test]
    fn a_request_keeps_the_words_that_name_something() {
        assert_eq!(
            query_words("Can you please show me the open PRs on my repo?", true),
            ["show", "open", "prs", "repo"]
        );
        let long = "word ".repeat(10) + &(0..100).map(|i| format!("w{i} ")).collect::<String>();
        assert_eq!(query_words(&long, true).len(), MAX_QUERY_WORDS);
        assert_eq!(query_words("read a.md", true), ["read", "md", "file"]);
        assert_eq!(query_words("read a.md", false), ["read", "md"]);
    }

    #[test]
    fn the_shape_of_a_word_says_what_it_is() {
        assert_eq!(
            implied_words("grab https://blog.rust-lang.org/"),
            ["url", "page", "web"]
        );
        assert_eq!(
            implied_words("sizes in /var/log"),
            ["path", "file", "directory"]
        );
        assert_eq!(implied_words("open shot.PNG"), ["file", "image", "media"]);
        assert_eq!(
            implied_words("read package.json and tsconfig.json"),
            ["file", "file", "multiple"]
        );
        assert_eq!(implied_words("post in #general, not #128"), ["channel"]);
        assert_eq!(
            implied_words("3pm or 10:30 or 9:15am"),
            ["time", "timezone", "time", "timezone", "time", "timezone"]
        );
        assert!(implied_words("3 or 1:2 or 123pm or pm").is_empty());
        assert_eq!(implied_words("mail bob@acme.com"), ["email"]);
        assert!(implied_words("fork torvalds/linux, v1.2 of 3.5 and e.g. this").is_empty());
    }
}
