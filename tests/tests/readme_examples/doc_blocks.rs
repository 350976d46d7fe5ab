//! The shell examples of the Markdown docs: every command of every ```` ```sh ```` block,
//! continuation lines joined, with where it is and whether the docs mark it as not run.
//!
//! Inline code spans that are a whole command against the local server (they start with a
//! client, `curl ` say, and name `127.0.0.1`) are examples too: a reader copies them as
//! they are. Spans with a placeholder host (`rtsp://host:8554/...`) are illustrations.
//!
//! A block the tests cannot run (it installs packages as root, needs systemd, runs the
//! whole suite) carries the line `<!-- example not run: <why> -->` just above its fence,
//! so that skipping it is written down beside it rather than hidden in the test.

/// What marks a block as not run; the reason follows it up to `-->`.
const NOT_RUN: &str = "<!-- example not run:";

/// One command of a shell block.
#[derive(Debug, Clone)]
pub struct Example {
    /// The file, relative to the repository root.
    pub file: String,
    /// The 1-based line its command starts on.
    pub line: usize,
    pub command: String,
    /// Why the docs say it is not run, if they do.
    pub not_run: Option<String>,
}

impl Example {
    /// `file:line: command`, for failure messages.
    pub fn shown(&self) -> String {
        format!("{}:{}: {}", self.file, self.line, self.command)
    }
}

/// The commands of the ```` ```sh ```` blocks of `text` (a Markdown file named `file`).
pub fn shell_examples(file: &str, text: &str) -> Vec<Example> {
    let mut examples = Vec::new();
    let mut in_sh = false;
    let mut not_run: Option<String> = None;
    let mut marker: Option<String> = None;
    let mut pending = String::new();
    let mut pending_line = 0;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            if in_sh {
                in_sh = false;
                not_run = None;
            } else {
                in_sh = trimmed == "```sh";
                not_run = if in_sh { marker.take() } else { None };
            }
            marker = None;
            continue;
        }
        if !in_sh {
            marker = trimmed.strip_prefix(NOT_RUN).map(|rest| {
                let reason = rest.trim().trim_end_matches("-->").trim();
                assert!(
                    !reason.is_empty(),
                    "{file}:{}: a not-run marker must say why",
                    index + 1
                );
                reason.to_owned()
            });
            continue;
        }
        if pending.is_empty() {
            pending_line = index + 1;
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
        }
        match line.strip_suffix('\\') {
            Some(start) => pending.push_str(start),
            None => {
                pending.push_str(line);
                let command = std::mem::take(&mut pending);
                examples.push(Example {
                    file: file.to_owned(),
                    line: pending_line,
                    command: command.trim().to_owned(),
                    not_run: not_run.clone(),
                });
            }
        }
    }
    examples
}

/// The clients whose inline spans can be examples.
const CLIENTS: [&str; 5] = ["curl ", "ffplay ", "ffprobe ", "ffmpeg ", "cvlc "];

/// The inline code spans of `text` outside fenced blocks that are commands against the
/// local server (see the header).
pub fn inline_examples(file: &str, text: &str) -> Vec<Example> {
    // Fenced lines blanked, so that offsets still give line numbers.
    let mut in_fence = false;
    let prose: Vec<&str> = text
        .lines()
        .map(|line| {
            let fence = line.trim_start().starts_with("```");
            let blank = in_fence || fence;
            in_fence ^= fence;
            if blank { "" } else { line }
        })
        .collect();
    let prose = prose.join("\n");
    let mut examples = Vec::new();
    let mut offset = 0;
    for (index, part) in prose.split('`').enumerate() {
        let span = part.replace('\n', " ");
        if index % 2 == 1
            && CLIENTS.iter().any(|client| span.starts_with(client))
            && span.contains("127.0.0.1")
        {
            examples.push(Example {
                file: file.to_owned(),
                line: prose[..offset].matches('\n').count() + 1,
                command: span.trim().to_owned(),
                not_run: None,
            });
        }
        offset += part.len() + 1;
    }
    examples
}

#[test]
fn inline_commands_against_the_local_server_are_examples() {
    let text = "a `curl http://127.0.0.1:8082/x` b `ffplay rtsp://host:1/x`\n\
        ```sh\n`curl http://127.0.0.1:1/in-block`\n```\nsee `ffprobe\nhttp://127.0.0.1:1/y`\n";
    let examples = inline_examples("f.md", text);
    let commands: Vec<_> = examples.iter().map(|e| e.command.as_str()).collect();
    assert_eq!(
        commands,
        [
            "curl http://127.0.0.1:8082/x",
            "ffprobe http://127.0.0.1:1/y"
        ]
    );
    assert_eq!(examples[1].line, 5);
}

#[test]
fn blocks_markers_and_continuations_are_read() {
    let text = "x\n```sh\nffmpeg a \\\n  b\n# comment\n\ncurl c\n```\n\
        <!-- example not run: needs root -->\n```sh\nsudo x\n```\n```json\n{}\n```\n";
    let examples = shell_examples("f.md", text);
    let commands: Vec<_> = examples.iter().map(|e| e.command.as_str()).collect();
    assert_eq!(commands, ["ffmpeg a   b", "curl c", "sudo x"]);
    assert_eq!(examples[0].line, 3);
    assert_eq!(examples[1].line, 7);
    assert_eq!(examples[1].not_run, None);
    assert_eq!(examples[2].not_run.as_deref(), Some("needs root"));
}
