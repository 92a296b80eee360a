//! SHA-256 digests as lowercase hex: of a call's arguments, of a tool's definition, of a
//! ledger line, as the ledger and remembered approvals keep them.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The SHA-256 of `bytes`, as 64 lowercase hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Bytes as lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

/// The SHA-256 of a JSON value written with every object's keys in order, so the same
/// value has the same digest however its file orders its keys.
pub fn json_sha256(value: &Value) -> String {
    fn write(v: &Value, out: &mut Vec<u8>) {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push(b'{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write(&Value::String(k.clone()), out);
                    out.push(b':');
                    write(&map[k], out);
                }
                out.push(b'}');
            }
            Value::Array(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write(item, out);
                }
                out.push(b']');
            }
            // A scalar's JSON text is the same in any order: serde_json writes it.
            scalar => out.extend(serde_json::to_vec(scalar).unwrap_or_default()),
        }
    }
    let mut bytes = Vec::new();
    write(value, &mut bytes);
    sha256_hex(&bytes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_json_digest_ignores_key_order_but_not_values() {
        let a = serde_json::json!({"b": [1, {"y": 2, "x": "é"}], "a": null});
        let b: serde_json::Value =
            serde_json::from_str(r#"{"a": null, "b": [1, {"x": "é", "y": 2}]}"#).unwrap();
        assert_eq!(super::json_sha256(&a), super::json_sha256(&b));
        let c = serde_json::json!({"b": [{"y": 2, "x": "é"}, 1], "a": null});
        assert_ne!(super::json_sha256(&a), super::json_sha256(&c));
        assert_ne!(
            super::json_sha256(&serde_json::json!({"a": "1"})),
            super::json_sha256(&serde_json::json!({"a": 1}))
        );
    }

    #[test]
    fn digests_are_sha256_in_hex() {
        assert_eq!(
            super::sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(super::hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
    }
}
