//! A zip archive whose files are stored, not compressed: what every unzip and every file
//! manager opens, for a folder of files a teacher puts on a course site. (Safetensors weights
//! hardly compress anyway.) The format is PKWARE's APPNOTE: per file a local header and its
//! bytes, then a central directory listing them, then its end record. No zip64: an archive of
//! 4 GiB or more is refused (a checkpoint file is at most `engine::checkpoint::MAX_FILE_BYTES`).

use crate::{LabError, LabResult};

const LOCAL_HEADER: u32 = 0x0403_4b50;
const CENTRAL_HEADER: u32 = 0x0201_4b50;
const END_OF_CENTRAL_DIRECTORY: u32 = 0x0605_4b50;
/// Version 2.0 of the format: folders and stored files.
const VERSION: u16 = 20;
/// General purpose flag bit 11: names are UTF-8.
const UTF8_NAMES: u16 = 1 << 11;
/// MS-DOS's directory attribute, for a folder's entry.
const DOS_DIRECTORY: u32 = 0x10;

/// A file's modification time as MS-DOS wrote it, which zip keeps: 2-second resolution, local
/// time, years 1980 to 2107.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DosTime {
    pub date: u16,
    pub time: u16,
}

impl DosTime {
    /// Out-of-range parts are clamped to the nearest time DOS can hold.
    pub fn new(year: u32, month: u32, day: u32, hour: u32, minute: u32, second: u32) -> DosTime {
        let year = year.clamp(1980, 2107) - 1980;
        DosTime {
            date: ((year << 9) | (month.clamp(1, 12) << 5) | day.clamp(1, 31)) as u16,
            time: ((hour.min(23) << 11) | (minute.min(59) << 5) | (second.min(59) / 2)) as u16,
        }
    }
}

/// An archive of `entries`, each a path inside it ("folder/file.txt"; one ending in "/" is a
/// folder) and its bytes, in that order.
pub fn zip(entries: &[(&str, &[u8])], when: DosTime) -> LabResult<Vec<u8>> {
    let too_big = || {
        LabError::file("The archive would be 4 GB or more, which a zip without zip64 cannot hold.")
    };
    let u32_of = |n: usize| u32::try_from(n).map_err(|_| too_big());
    let count = u16::try_from(entries.len())
        .map_err(|_| LabError::file("An archive holds at most 65,535 files."))?;
    let mut out = Vec::new();
    let mut central = Vec::new();
    for &(path, bytes) in entries {
        if path.is_empty()
            || path.len() > usize::from(u16::MAX)
            || path.starts_with('/')
            || path.contains('\\')
        {
            return Err(LabError::file(format!(
                "\"{path}\" is not a path inside an archive."
            )));
        }
        let offset = u32_of(out.len())?;
        let size = u32_of(bytes.len())?;
        let crc = crc32fast::hash(bytes);
        // What the local and the central header both say of the file, from "version needed".
        let mut common = Vec::new();
        for v in [VERSION, UTF8_NAMES, 0, when.time, when.date] {
            common.extend(v.to_le_bytes());
        }
        for v in [crc, size, size] {
            common.extend(v.to_le_bytes());
        }
        common.extend((path.len() as u16).to_le_bytes());
        common.extend(0u16.to_le_bytes()); // no extra field

        out.extend(LOCAL_HEADER.to_le_bytes());
        out.extend(&common);
        out.extend(path.as_bytes());
        out.extend(bytes);

        central.extend(CENTRAL_HEADER.to_le_bytes());
        central.extend(VERSION.to_le_bytes()); // made by: MS-DOS, version 2.0
        central.extend(&common);
        central.extend(0u16.to_le_bytes()); // no comment
        central.extend(0u16.to_le_bytes()); // disk 0
        central.extend(0u16.to_le_bytes()); // internal attributes
        let external = if path.ends_with('/') {
            DOS_DIRECTORY
        } else {
            0
        };
        central.extend(external.to_le_bytes());
        central.extend(offset.to_le_bytes());
        central.extend(path.as_bytes());
    }
    let central_offset = u32_of(out.len())?;
    let central_size = u32_of(central.len())?;
    out.extend(central);
    u32_of(out.len())?;
    out.extend(END_OF_CENTRAL_DIRECTORY.to_le_bytes());
    out.extend(0u16.to_le_bytes()); // this disk
    out.extend(0u16.to_le_bytes()); // the disk the directory starts on
    out.extend(count.to_le_bytes()); // entries on this disk
    out.extend(count.to_le_bytes()); // entries in all
    out.extend(central_size.to_le_bytes());
    out.extend(central_offset.to_le_bytes());
    out.extend(0u16.to_le_bytes()); // no comment
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn u16_at(b: &[u8], at: usize) -> u16 {
        u16::from_le_bytes([b[at], b[at + 1]])
    }
    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    /// An archive read as an unzip reads it, from its end: the end record, the central
    /// directory, and through it each local header and the bytes after it, every CRC checked.
    /// Returns (path, bytes, date, time) per entry.
    pub(crate) fn unzip(b: &[u8]) -> Vec<(String, Vec<u8>, u16, u16)> {
        let end = b.len() - 22;
        assert_eq!(
            u32_at(b, end),
            END_OF_CENTRAL_DIRECTORY,
            "the end record is last"
        );
        let count = u16_at(b, end + 10) as usize;
        assert_eq!(u16_at(b, end + 8) as usize, count);
        let (size, mut at) = (u32_at(b, end + 12) as usize, u32_at(b, end + 16) as usize);
        assert_eq!(
            at + size,
            end,
            "the central directory ends where the end record starts"
        );
        let mut out = Vec::new();
        for _ in 0..count {
            assert_eq!(u32_at(b, at), CENTRAL_HEADER);
            let (flags, method) = (u16_at(b, at + 8), u16_at(b, at + 10));
            assert_eq!((flags, method), (UTF8_NAMES, 0), "UTF-8 names, stored");
            let (time, date) = (u16_at(b, at + 12), u16_at(b, at + 14));
            let (crc, packed, size) = (u32_at(b, at + 16), u32_at(b, at + 20), u32_at(b, at + 24));
            assert_eq!(packed, size, "stored: as large packed as not");
            let name_len = u16_at(b, at + 28) as usize;
            let (extra, comment) = (u16_at(b, at + 30) as usize, u16_at(b, at + 32) as usize);
            let local = u32_at(b, at + 42) as usize;
            let name = String::from_utf8(b[at + 46..at + 46 + name_len].to_vec()).unwrap();
            // The local header says the same.
            assert_eq!(u32_at(b, local), LOCAL_HEADER);
            assert_eq!(
                b[local + 4..local + 30],
                b[at + 6..at + 32],
                "{name}: headers agree"
            );
            let local_name_len = u16_at(b, local + 26) as usize;
            let data = local + 30 + local_name_len + u16_at(b, local + 28) as usize;
            let bytes = b[data..data + size as usize].to_vec();
            assert_eq!(crc32fast::hash(&bytes), crc, "{name}: CRC-32");
            out.push((name, bytes, date, time));
            at += 46 + name_len + extra + comment;
        }
        out
    }

    #[test]
    fn crc_32_is_the_standard_one() {
        // The check value of CRC-32/ISO-HDLC, the zip's CRC.
        assert_eq!(crc32fast::hash(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn entries_come_back_as_written() {
        let weights: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 256) as u8).collect();
        let when = DosTime::new(2026, 12, 5, 14, 30, 59);
        let entries: [(&str, &[u8]); 4] = [
            ("tiny-step30/", b""),
            ("tiny-step30/model.safetensors", &weights),
            ("tiny-step30/vocab.txt", "[PAD]\nchat 🐱\n".as_bytes()),
            ("README.txt", b""),
        ];
        let archive = zip(&entries, when).unwrap();
        let read = unzip(&archive);
        assert_eq!(read.len(), 4);
        for ((path, bytes), (name, back, date, time)) in entries.iter().zip(read) {
            assert_eq!((*path, *bytes), (name.as_str(), back.as_slice()));
            assert_eq!((date, time), (when.date, when.time));
        }
        // 30 + 46 bytes of headers per entry, with its name twice, and 22 at the end.
        let names: usize = entries.iter().map(|(p, _)| 2 * p.len()).sum();
        let bytes: usize = entries.iter().map(|(_, b)| b.len()).sum();
        assert_eq!(archive.len(), 4 * (30 + 46) + names + bytes + 22);
        // A folder's entry says it is one.
        let folder = archive.len() - 22 - (46 * 4 + names / 2);
        assert_eq!(u32_at(&archive, folder + 38), DOS_DIRECTORY);
    }

    #[test]
    fn dos_time_packs_as_dos_did() {
        let t = DosTime::new(2026, 12, 5, 14, 30, 59);
        assert_eq!(t.date >> 9, 46);
        assert_eq!((t.date >> 5) & 0xf, 12);
        assert_eq!(t.date & 0x1f, 5);
        assert_eq!(
            (t.time >> 11, (t.time >> 5) & 0x3f, t.time & 0x1f),
            (14, 30, 29)
        );
        assert_eq!(
            DosTime::new(1970, 0, 0, 99, 99, 99),
            DosTime::new(1980, 1, 1, 23, 59, 59)
        );
    }

    #[test]
    fn an_empty_archive_is_its_end_record_and_bad_paths_are_refused() {
        let empty = zip(&[], DosTime::new(2026, 1, 1, 0, 0, 0)).unwrap();
        assert_eq!(empty.len(), 22);
        assert!(unzip(&empty).is_empty());
        let when = DosTime::new(2026, 1, 1, 0, 0, 0);
        for path in ["", "/etc/passwd", "a\\b.txt"] {
            assert!(zip(&[(path, b"x")], when).is_err(), "{path:?}");
        }
    }
}
