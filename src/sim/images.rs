//! Images in chat requests as the simulator counts them: each `image_url` part must be a
//! base64 data URL of an image whose header gives its size, and costs
//! `ceil(width / 28) · ceil(height / 28)` prompt tokens (one per 28×28 patch, as Qwen2-VL
//! merges its 14-pixel patches two by two).

use base64::Engine;

use super::api::ChatMessage;

/// Pixels on a side of the square one image token covers.
pub const PATCH_PIXELS: u32 = 28;

/// Prompt tokens of one image of this size.
pub fn image_tokens(width: u32, height: u32) -> u64 {
    u64::from(width.div_ceil(PATCH_PIXELS)) * u64::from(height.div_ceil(PATCH_PIXELS))
}

/// The size of the image in a `data:image/…;base64,…` URL, read from its decoded header.
pub fn data_url_size(url: &str) -> Result<(u32, u32), String> {
    let Some(rest) = url.strip_prefix("data:") else {
        return Err(
            "an image_url must be a base64 data URL (`data:image/…;base64,…`); \
                    the simulator fetches nothing"
                .into(),
        );
    };
    let Some((mime, payload)) = rest.split_once(";base64,") else {
        return Err("an image data URL must be base64 (`;base64,`)".into());
    };
    if !mime.starts_with("image/") {
        return Err(format!(
            "an image data URL names `{mime}`, not an image type"
        ));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .map_err(|e| format!("an image data URL's base64 does not decode: {e}"))?;
    let size = imagesize::blob_size(&bytes)
        .map_err(|e| format!("an image data URL holds no readable image: {e}"))?;
    let side = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Ok((side(size.width), side(size.height)))
}

/// Token ids standing for the messages' images, by the rule above: each image's ids follow
/// from its URL, so the same image gives the same ids (and prefix-cache blocks).
pub(crate) fn image_ids(messages: &[ChatMessage]) -> Result<Vec<u32>, String> {
    let mut ids = Vec::new();
    for url in messages.iter().flat_map(ChatMessage::image_urls) {
        let url = url?;
        let (width, height) = data_url_size(url)?;
        let seed = content_hash(url.as_bytes());
        let tokens = image_tokens(width, height);
        ids.extend((0..tokens).map(|k| super::rng::mix64(seed ^ k) as u32));
    }
    Ok(ids)
}

/// A 64-bit hash of an image URL, eight bytes a step: a 512×512 JPEG's URL is 74 kB, which a
/// byte-at-a-time hash would walk on every request.
fn content_hash(bytes: &[u8]) -> u64 {
    let mut chunks = bytes.chunks_exact(8);
    let mut h = bytes.len() as u64;
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        h = (h ^ word)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29);
    }
    for &byte in chunks.remainder() {
        h = (h ^ u64::from(byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    super::rng::mix64(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_content_hash_tells_urls_apart() {
        let a = "data:image/png;base64,AAAAAAAAAAAAAAAA";
        assert_eq!(content_hash(a.as_bytes()), content_hash(a.as_bytes()));
        assert_ne!(content_hash(a.as_bytes()), content_hash(&a.as_bytes()[1..]));
        let b = a.replacen("AAAAAAAAA", "AAAAAAAAB", 1);
        assert_ne!(content_hash(a.as_bytes()), content_hash(b.as_bytes()));
    }

    #[test]
    fn the_rule_rounds_each_side_up_to_whole_patches() {
        assert_eq!(image_tokens(512, 512), 19 * 19);
        assert_eq!(image_tokens(28, 28), 1);
        assert_eq!(image_tokens(29, 1), 2);
    }

    #[test]
    fn a_data_url_is_read_by_its_header_and_bad_ones_are_refused() {
        let png = {
            let mut bytes = Vec::new();
            let mut encoder = png::Encoder::new(&mut bytes, 30, 20);
            encoder.set_color(png::ColorType::Grayscale);
            let mut writer = encoder.write_header().unwrap();
            writer.write_image_data(&[0; 600]).unwrap();
            writer.finish().unwrap();
            bytes
        };
        let payload = base64::engine::general_purpose::STANDARD.encode(&png);
        let url = format!("data:image/png;base64,{payload}");
        assert_eq!(data_url_size(&url), Ok((30, 20)));
        assert!(data_url_size("https://example.com/a.png").is_err());
        assert!(data_url_size("data:image/png;base64,@@@").is_err());
        assert!(data_url_size("data:text/plain;base64,aGk=").is_err());
        assert!(data_url_size("data:image/png;base64,aGVsbG8=").is_err());
    }
}
