//! Answering a chunk without a scan: the thread's known chunk shapes and each stream's
//! template around its text value.

use super::{ChunkSummary, Cursor, TextFlag, scan};
use crate::client::json_text::plain_utf8_run;

/// Chunk shapes seen on this thread, so a chunk of a known shape is answered without a scan.
///
/// A shape is a chunk's bytes with holes where chunks of one kind differ: the top-level `id`
/// string, the `created` integer, and the one text value (`delta.content`, …). A chunk that
/// is a shape's bytes with plain strings (no quote, backslash or control character) and an
/// integer in the holes gets the shape's chunk's answer, with the text's flag set as its text
/// is empty or not: the scan is a pure function of the bytes, and none of it reads the holes
/// but the text's emptiness. Shapes outlive streams, so a stream's first chunks (the role,
/// the finish, the usage) are not scanned either, and are kept per thread so no lock is
/// taken.
pub(super) const MAX_SHAPES: usize = 16;

thread_local! {
    pub(super) static SHAPES: std::cell::RefCell<Shapes> = const {
        std::cell::RefCell::new(Shapes { list: Vec::new(), next: 0 })
    };
}

/// What a stream's own chunks teach the scan of its next ones, besides the thread's shapes:
/// the last answered chunk's bytes around its text value (its id and `created` included), so
/// the run of content chunks that makes up most of a stream is checked with two comparisons
/// rather than a shape's several; and the shape its last chunk had, tried first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamMemo {
    /// Valid when `templated`; its buffers outlive it, for the next template.
    pub(super) template: Template,
    pub(super) templated: bool,
    last: usize,
    /// The template was just tried on the next event's framing and missed: the event's chunk
    /// need not be tried again (a skipped try only costs a shape's, the answer is the same).
    template_missed: bool,
}

/// What the chunks of one layout say, with an empty and with a non-empty text; `None` where
/// the scan declines them (a chunk without text that names the server's timing).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Answers {
    if_empty: Option<ChunkSummary>,
    if_text: Option<ChunkSummary>,
    /// The layout's bytes hold no line break (its holes never do), so its chunks are one SSE
    /// line each.
    one_line: bool,
}

impl Answers {
    pub(super) fn pick(&self, empty: bool) -> Option<ChunkSummary> {
        if empty { self.if_empty } else { self.if_text }
    }
}

/// The bytes before and after a chunk's text value, framed as a whole SSE event (`data: `
/// before, a blank line after) in one buffer, and the answers for the text between them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Template {
    /// `data: `, the chunk's bytes before its text, after it, and `\n\n`.
    pub(super) bytes: Vec<u8>,
    /// Where the text goes in `bytes`.
    text_at: usize,
    answers: Answers,
}

impl Template {
    const DATA: &[u8] = b"data: ";
    const BLANK: &[u8] = b"\n\n";

    fn set(&mut self, data: &[u8], (start, end): (usize, usize), answers: Answers) {
        self.bytes.clear();
        self.bytes.extend_from_slice(Self::DATA);
        self.bytes.extend_from_slice(&data[..start]);
        self.bytes.extend_from_slice(&data[end..]);
        self.bytes.extend_from_slice(Self::BLANK);
        self.text_at = Self::DATA.len() + start;
        self.answers = answers;
    }

    /// The chunk's part of `framed`, a slice of a framed event.
    fn chunk<'b>(&self, framed: &'b [u8]) -> &'b [u8] {
        &framed[Self::DATA.len()..framed.len() - Self::BLANK.len()]
    }

    /// The answer for `data`, when it is the template's chunk around a plain string.
    pub(super) fn answer(&self, data: &[u8]) -> Option<Option<ChunkSummary>> {
        let (head, tail) = self
            .chunk(&self.bytes)
            .split_at(self.text_at - Self::DATA.len());
        let text = between(data, head, tail)?;
        (head.len() + text + tail.len() == data.len()).then(|| self.answers.pick(text == 0))
    }

    /// The whole event at the start of `bytes` when it is the template's framing around a
    /// plain string: its length, and its text's. (The tail starts with the text's closing
    /// quote, where the plain run stops.)
    #[inline]
    fn event_text(&self, bytes: &[u8]) -> Option<(usize, usize)> {
        let (head, tail) = self.bytes.split_at(self.text_at);
        let text = between(bytes, head, tail)?;
        Some((head.len() + text + tail.len(), text))
    }

    /// [`Template::event_text`] with the event's chunk's length and its answer.
    fn event(&self, bytes: &[u8]) -> Option<(usize, usize, Option<ChunkSummary>)> {
        let (len, text) = self.event_text(bytes)?;
        let chunk_len = len - Self::DATA.len() - Self::BLANK.len();
        Some((len, chunk_len, self.answers.pick(text == 0)))
    }
}

/// The length of the plain UTF-8 string between `head` and `tail` at the start of `bytes`.
#[inline]
fn between(bytes: &[u8], head: &[u8], tail: &[u8]) -> Option<usize> {
    let rest = bytes.strip_prefix(head)?;
    let text = plain_utf8_run(rest)?;
    rest[text..].starts_with(tail).then_some(text)
}

/// Up to this many finished streams' memos are kept per thread for reuse.
const SPARE_MEMOS: usize = 64;

thread_local! {
    static SPARE: std::cell::RefCell<Vec<StreamMemo>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl StreamMemo {
    /// Whether [`StreamMemo::whole_event`] can answer: the stream has a template of one line.
    pub fn has_event_template(&self) -> bool {
        self.templated && self.template.answers.one_line
    }

    /// What the template's events say with an empty and with a non-empty text (`None`: the
    /// full parser reads such a chunk). Call only when [`StreamMemo::has_event_template`].
    pub fn event_answers(&self) -> (Option<ChunkSummary>, Option<ChunkSummary>) {
        let answers = self.template.answers;
        (answers.if_empty, answers.if_text)
    }

    /// The run of whole template events at the start of `bytes` (see
    /// [`StreamMemo::whole_event`]): its length in bytes, and how many of its events have a
    /// non-empty text and how many an empty one.
    pub fn event_run(&self, bytes: &[u8]) -> (usize, u64, u64) {
        let (mut len, mut texts, mut empties) = (0, 0, 0);
        while let Some((event_len, text)) = self.template.event_text(&bytes[len..]) {
            len += event_len;
            if text == 0 {
                empties += 1;
            } else {
                texts += 1;
            }
        }
        (len, texts, empties)
    }

    /// The whole SSE event at the start of `bytes` when it is `data: `, the stream's template
    /// with a plain text, and a blank line: its length, its chunk's length (the chunk starts
    /// after `data: `), and its answer (`None`: the full parser reads it). Call only when
    /// [`StreamMemo::has_event_template`].
    #[inline]
    pub fn whole_event(&self, bytes: &[u8]) -> Option<(usize, usize, Option<ChunkSummary>)> {
        self.template.event(bytes)
    }

    /// The template missed the event the SSE parser goes on with.
    pub fn note_template_missed(&mut self) {
        self.template_missed = true;
    }

    /// An empty memo, in the buffers of a finished stream's when this thread kept one: made
    /// anew, a memo costs an allocation per request.
    pub fn take() -> StreamMemo {
        let spare = SPARE.with(|spare| spare.borrow_mut().pop());
        spare.map_or_else(StreamMemo::default, |mut memo| {
            memo.templated = false;
            memo.last = 0;
            memo.template_missed = false;
            memo
        })
    }

    /// Keep this memo's buffers for a later stream on this thread.
    pub fn give_back(self) {
        SPARE.with(|spare| {
            let mut spare = spare.borrow_mut();
            if spare.len() < SPARE_MEMOS {
                spare.push(self);
            }
        });
    }
}

pub(super) struct Shapes {
    pub(super) list: Vec<Shape>,
    /// The slot the next shape takes once the list is full.
    next: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Shape {
    /// The chunk's bytes outside its holes, one run after another.
    literal: Vec<u8>,
    /// Each hole in order: where the literal run before it ends, and what it holds.
    holes: Vec<(usize, Hole)>,
    pub(super) answers: Answers,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hole {
    /// A plain string's bytes between its quotes.
    Id,
    /// An integer's digits.
    Created,
    /// A plain string's bytes, whose emptiness the answer follows.
    Text,
}

/// [`fast`], answered from the stream's template or a known shape when the chunk fits one; a
/// scanned chunk's shape is learnt. `None`: the full parser reads the chunk.
pub fn fast_with_memo(data: &[u8], memo: &mut StreamMemo) -> Option<ChunkSummary> {
    let missed = std::mem::take(&mut memo.template_missed);
    if memo.templated
        && !missed
        && let Some(answer) = memo.template.answer(data)
    {
        return answer;
    }
    // A stream's template is its last shape with its own id and `created`: when it misses, so
    // does that shape, and the stream has moved on to the next kind of chunk.
    let first = memo.last + usize::from(memo.templated);
    let (answers, text) = SHAPES.with(|shapes| {
        let mut shapes = shapes.borrow_mut();
        if let Some((index, text)) = shapes.answer(data, first) {
            memo.last = index;
            return Some((shapes.list[index].answers, text));
        }
        let (summary, c) = scan(data)?;
        let (index, answers, text) = shapes.learn(data, &c, summary);
        memo.last = index.unwrap_or(memo.last);
        Some((answers, text))
    })?;
    // The text's place in these bytes makes the stream's next template; a chunk without one
    // keeps the last.
    if let Some(span) = text {
        memo.template.set(data, span, answers);
        memo.templated = true;
    }
    answers.pick(text.is_some_and(|(start, end)| start == end))
}

impl Shapes {
    /// The first shape, from `first` on, that `data` fits: its index, and where the chunk's
    /// text lies.
    pub(super) fn answer(
        &self,
        data: &[u8],
        first: usize,
    ) -> Option<(usize, Option<(usize, usize)>)> {
        // From `first` to the end, then from the start: no division per shape tried.
        let first = first.min(self.list.len());
        (first..self.list.len())
            .chain(0..first)
            .find_map(|index| Some((index, self.list[index].fit(data)?)))
    }

    /// Keep the shape of a scanned chunk, unless it has more than one text value: its index,
    /// its answers, and where the chunk's text lies.
    fn learn(
        &mut self,
        data: &[u8],
        c: &Cursor<'_>,
        summary: ChunkSummary,
    ) -> (Option<usize>, Answers, Option<(usize, usize)>) {
        // What the scan says of this layout's chunks with `summary`'s text flags.
        let answer =
            |summary: ChunkSummary| (summary.carries_text() || !c.names_timings).then_some(summary);
        let mut answers = Answers {
            if_empty: answer(summary),
            if_text: answer(summary),
            one_line: memchr::memchr2(b'\n', b'\r', data).is_none(),
        };
        let text = match c.text_values {
            0 => None,
            1 => c.text_span,
            _ => return (None, answers, None),
        };
        if let Some((.., flag)) = text {
            answers.if_empty = answer(with_text(summary, flag, false));
            answers.if_text = answer(with_text(summary, flag, true));
        }
        let mut spans: Vec<(usize, usize, Hole)> = [
            c.id_span.map(|(start, end)| (start, end, Hole::Id)),
            c.created_span
                .map(|(start, end)| (start, end, Hole::Created)),
            text.map(|(start, end, _)| (start, end, Hole::Text)),
        ]
        .into_iter()
        .flatten()
        .collect();
        spans.sort_unstable_by_key(|&(start, ..)| start);
        let mut shape = Shape {
            literal: Vec::with_capacity(data.len()),
            holes: Vec::with_capacity(spans.len()),
            answers,
        };
        let mut from = 0;
        for (start, end, hole) in spans {
            shape.literal.extend_from_slice(&data[from..start]);
            shape.holes.push((shape.literal.len(), hole));
            from = end;
        }
        shape.literal.extend_from_slice(&data[from..]);
        let index = if self.list.len() < MAX_SHAPES {
            self.list.push(shape);
            self.list.len() - 1
        } else {
            let index = self.next;
            self.list[index] = shape;
            self.next = (index + 1) % MAX_SHAPES;
            index
        };
        (
            Some(index),
            answers,
            text.map(|(start, end, _)| (start, end)),
        )
    }
}

/// `answer` with the choice flag a text value sets made `non_empty`.
fn with_text(mut answer: ChunkSummary, flag: TextFlag, non_empty: bool) -> ChunkSummary {
    if let Some(choice) = answer.choice.as_mut() {
        match flag {
            TextFlag::Content => choice.content = non_empty,
            TextFlag::Reasoning => choice.reasoning = non_empty,
        }
    }
    answer
}

impl Shape {
    /// Whether `data` is this shape's bytes with its holes filled: then where its text lies.
    fn fit(&self, data: &[u8]) -> Option<Option<(usize, usize)>> {
        let mut rest = data;
        let mut from = 0;
        let mut text = None;
        for &(to, hole) in &self.holes {
            rest = rest.strip_prefix(&self.literal[from..to])?;
            from = to;
            let len = match hole {
                Hole::Id | Hole::Text => quoted_plain_len(rest)?,
                Hole::Created => integer_len(rest)?,
            };
            if hole == Hole::Text {
                let start = data.len() - rest.len();
                text = Some((start, start + len));
            }
            rest = &rest[len..];
        }
        (rest == &self.literal[from..]).then_some(text)
    }
}

/// The length of the plain string bytes at the start of `b` up to a closing quote, when they
/// are UTF-8.
fn quoted_plain_len(b: &[u8]) -> Option<usize> {
    let len = plain_utf8_run(b)?;
    (b.get(len) == Some(&b'"')).then_some(len)
}

/// The length of the digits at the start of `b` when they make a JSON integer.
fn integer_len(b: &[u8]) -> Option<usize> {
    let len = b.iter().take_while(|d| d.is_ascii_digit()).count();
    (len == 1 || (len > 1 && b[0] != b'0')).then_some(len)
}
