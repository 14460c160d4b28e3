//! Images for chat requests: a seeded pool of distinct encoded images built ahead of a
//! phase, dataset image files read once, each held as the base64 data URL the body carries.

use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use rand::Rng;

use super::WorkloadError;
use super::synthetic::{Purpose, stream_rng};
use crate::plan::{ImageFormat, Images};

/// JPEG quality of generated images (a common default of photo tools).
const JPEG_QUALITY: u8 = 85;
/// Noise added to each channel (a mask): enough that a 512×512 JPEG weighs about what a
/// photo of that size does (tens of kilobytes), not so much that it is all noise.
const NOISE: u64 = 0x03;

/// One image as a request carries it: its data URL (shared, not copied, by every request that
/// sends it) and its size in pixels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// `data:image/…;base64,…`: base64 and the prefix need no JSON escaping.
    pub url: Arc<str>,
    pub width: u32,
    pub height: u32,
}

impl Image {
    /// An encoded image's data URL.
    fn encoded(mime: &str, bytes: &[u8], width: u32, height: u32) -> Image {
        let mut url = format!("data:{mime};base64,");
        base64::engine::general_purpose::STANDARD.encode_string(bytes, &mut url);
        Image {
            url: url.into(),
            width,
            height,
        }
    }
}

/// A workload's generated images: `pool` distinct ones, sent in turn.
#[derive(Debug)]
pub struct ImagePool {
    images: Vec<Image>,
    plan: Images,
    seed: u64,
}

impl ImagePool {
    /// Builds the pool, on every core: image `k` depends only on the seed, `k` and the plan.
    pub fn build(plan: &Images, seed: u64) -> Result<ImagePool, WorkloadError> {
        let size = plan.pool_size().max(1) as usize;
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(size);
        let built: Vec<Result<Vec<(usize, Image)>, WorkloadError>> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|t| {
                    s.spawn(move || {
                        (t..size)
                            .step_by(threads)
                            .map(|k| Ok((k, generate(plan, seed, k as u64)?)))
                            .collect()
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| {
                    w.join()
                        .unwrap_or_else(|_| Err(WorkloadError("an image encoder panicked".into())))
                })
                .collect()
        });
        let mut images: Vec<Option<Image>> = vec![None; size];
        for part in built {
            for (k, image) in part? {
                images[k] = Some(image);
            }
        }
        Ok(ImagePool {
            images: images.into_iter().flatten().collect(),
            plan: plan.clone(),
            seed,
        })
    }

    /// Request `index`'s images: a seeded count, then the pool's next images in turn.
    pub fn for_request(&self, index: u64) -> Vec<Image> {
        let count = match &self.plan.count {
            Some(count) => {
                let mut rng = stream_rng(self.seed, Purpose::Images, index);
                u64::from(super::synthetic::sample_count(count, &mut rng))
            }
            None => 1,
        };
        let len = self.images.len() as u64;
        (0..count)
            .map(|k| self.images[((index.wrapping_mul(count) + k) % len) as usize].clone())
            .collect()
    }

    /// Bytes of the pool's data URLs (held once, whatever the phase's length).
    pub fn bytes(&self) -> usize {
        self.images.iter().map(|i| i.url.len()).sum()
    }

    /// One line for the report header, e.g. `1 × 512×512 jpeg per request (64 distinct)`.
    pub fn describe(&self) -> String {
        let count = self
            .plan
            .count
            .as_ref()
            .map_or("1".into(), super::synthetic::describe_count);
        let format = match self.plan.format {
            ImageFormat::Jpeg => "jpeg",
            ImageFormat::Png => "png",
        };
        format!(
            "{count} × {}×{} {format} per request ({} distinct)",
            self.plan.width,
            self.plan.height,
            self.images.len()
        )
    }
}

/// Image `k` of the pool: a seeded diagonal gradient with seeded noise, so no two images are
/// alike and the encoder does real work (a flat image would encode to almost nothing).
fn generate(plan: &Images, seed: u64, k: u64) -> Result<Image, WorkloadError> {
    let (width, height) = (plan.width, plan.height);
    let mut rng = stream_rng(seed, Purpose::Images, u64::MAX - k);
    let base: [u32; 3] = std::array::from_fn(|_| rng.random_range(0..256));
    let slope: [u32; 3] = std::array::from_fn(|_| rng.random_range(1..4));
    let mut noise: u64 = rng.random();
    let mut pixels = Vec::with_capacity(width as usize * height as usize * 3);
    for y in 0..height {
        for x in 0..width {
            // xorshift: cheap noise, seeded per image.
            noise ^= noise << 13;
            noise ^= noise >> 7;
            noise ^= noise << 17;
            for c in 0..3 {
                let along = if c == 1 { y } else { x + y * (c as u32) };
                let value = base[c] + along * slope[c] + (noise >> (8 * c) & NOISE) as u32;
                pixels.push((value % 256) as u8);
            }
        }
    }
    let failed = |e: String| WorkloadError(format!("cannot encode a generated image: {e}"));
    let mut bytes = Vec::new();
    match plan.format {
        ImageFormat::Jpeg => {
            let side =
                |n: u32| u16::try_from(n).map_err(|_| failed(format!("{n} px is too large")));
            jpeg_encoder::Encoder::new(&mut bytes, JPEG_QUALITY)
                .encode(
                    &pixels,
                    side(width)?,
                    side(height)?,
                    jpeg_encoder::ColorType::Rgb,
                )
                .map_err(|e| failed(e.to_string()))?;
        }
        ImageFormat::Png => {
            let mut encoder = png::Encoder::new(&mut bytes, width, height);
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Eight);
            let mut writer = encoder.write_header().map_err(|e| failed(e.to_string()))?;
            writer
                .write_image_data(&pixels)
                .map_err(|e| failed(e.to_string()))?;
            writer.finish().map_err(|e| failed(e.to_string()))?;
        }
    }
    Ok(Image::encoded(plan.format.mime(), &bytes, width, height))
}

/// A dataset row's image file, read once: its type from its content (JPEG, PNG, GIF, WebP,
/// BMP), its size from its header.
pub fn read_file(path: &Path) -> Result<Image, WorkloadError> {
    let bytes = std::fs::read(path)
        .map_err(|e| WorkloadError(format!("cannot read image {}: {e}", path.display())))?;
    let unreadable = |e: imagesize::ImageError| {
        WorkloadError(format!(
            "{} is not an image this tool reads (JPEG, PNG, GIF, WebP, BMP): {e}",
            path.display()
        ))
    };
    let mime = match imagesize::image_type(&bytes).map_err(unreadable)? {
        imagesize::ImageType::Jpeg => "image/jpeg",
        imagesize::ImageType::Png => "image/png",
        imagesize::ImageType::Gif => "image/gif",
        imagesize::ImageType::Webp => "image/webp",
        imagesize::ImageType::Bmp => "image/bmp",
        other => {
            return Err(WorkloadError(format!(
                "{}: {other:?} images are not sent",
                path.display()
            )));
        }
    };
    let size = imagesize::blob_size(&bytes).map_err(unreadable)?;
    let side = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Ok(Image::encoded(
        mime,
        &bytes,
        side(size.width),
        side(size.height),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(format: ImageFormat, pool: u32) -> Images {
        Images {
            count: None,
            width: 64,
            height: 48,
            format,
            pool: Some(pool),
        }
    }

    #[test]
    fn a_pool_is_seeded_distinct_and_decodes_to_its_size() {
        for format in [ImageFormat::Jpeg, ImageFormat::Png] {
            let a = ImagePool::build(&plan(format, 5), 7).unwrap();
            let b = ImagePool::build(&plan(format, 5), 7).unwrap();
            let other_seed = ImagePool::build(&plan(format, 5), 8).unwrap();
            assert_eq!(a.images, b.images);
            assert_ne!(a.images[0], other_seed.images[0]);
            let distinct: std::collections::BTreeSet<&str> =
                a.images.iter().map(|i| &*i.url).collect();
            assert_eq!(distinct.len(), 5);
            let prefix = format!("data:{};base64,", format.mime());
            let payload = a.images[3].url.strip_prefix(&prefix).expect("data URL");
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(payload)
                .unwrap();
            let size = imagesize::blob_size(&bytes).unwrap();
            assert_eq!((size.width, size.height), (64, 48));
        }
    }

    #[test]
    fn a_generated_jpeg_weighs_about_what_a_photo_does() {
        let plan = Images {
            width: 512,
            height: 512,
            ..plan(ImageFormat::Jpeg, 2)
        };
        let pool = ImagePool::build(&plan, 1).unwrap();
        let bytes = pool.bytes() / 2;
        eprintln!("512×512 JPEG data URL: {bytes} bytes");
        assert!((20_000..120_000).contains(&bytes), "{bytes} bytes");
    }

    #[test]
    fn requests_take_the_pool_in_turn() {
        let pool = ImagePool::build(&plan(ImageFormat::Jpeg, 3), 1).unwrap();
        let urls: Vec<Arc<str>> = (0..4).map(|i| pool.for_request(i).remove(0).url).collect();
        assert_ne!(urls[0], urls[1]);
        assert_ne!(urls[1], urls[2]);
        assert_eq!(urls[0], urls[3]);
        // Shared, not copied.
        assert!(Arc::ptr_eq(&urls[0], &urls[3]));
    }
}
