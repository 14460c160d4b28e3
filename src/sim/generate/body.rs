//! The simulator's response body: a fixed buffer, or a generation streamed as it runs.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

use super::Generation;

/// A response body: a fixed buffer, or a generation streamed as it runs.
pub(crate) enum SimBody {
    Full(Option<Bytes>),
    Generation(Box<Generation>),
}

impl SimBody {
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        SimBody::Full(Some(bytes.into()))
    }
}

impl Body for SimBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match self.get_mut() {
            SimBody::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            SimBody::Generation(generation) => generation
                .poll_next(cx)
                .map(|next| next.map(|result| result.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            SimBody::Full(bytes) => bytes.is_none(),
            SimBody::Generation(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            SimBody::Full(Some(bytes)) => SizeHint::with_exact(bytes.len() as u64),
            SimBody::Full(None) => SizeHint::with_exact(0),
            SimBody::Generation(_) => SizeHint::default(),
        }
    }
}
