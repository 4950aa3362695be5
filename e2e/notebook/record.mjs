// pytorch/record.json: what the torch checks found, with the hashes of the files they checked,
// so that `./dev test` (without torch) can tell a record made for other files.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export const RECORD = path.join(root, 'pytorch/record.json');

/// Every file that shapes a notebook: the module (pasted whole), the template, the code that
/// writes the notebook, and the page's code that gathers what it holds (the input, the view,
/// the run's training). protocol/tests/pytorch_record.rs checks the same files.
export const HASHED = [
  'pytorch/attention_lab.py',
  'pytorch/notebook.py',
  'protocol/src/notebook.rs',
  'src/pytorch/notebook.rs',
];

/// FNV-1a, 64 bits, as 16 hex digits: a fingerprint of a file's bytes (not a defence against
/// anyone: it tells an edit from the file the record was made for).
export function fnv1a64(bytes) {
  let h = 0xcbf29ce484222325n;
  for (const b of bytes) {
    h ^= BigInt(b);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(16).padStart(16, '0');
}
