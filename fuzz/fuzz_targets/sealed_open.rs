//! Sealed blocks and journal items as read back from disk (storage::encryption::Cipher::open):
//! any bytes open or fail with an error, never a panic; only what was sealed under the key set
//! opens (AES-256-GCM authenticates the header and the ciphertext).
#![no_main]

use libfuzzer_sys::fuzz_target;
use storage::encryption::Cipher;
use storage::KeySet;

fuzz_target!(|data: &[u8]| {
    let keys = KeySet::from_keys("fuzz", &[(1, [7; 32]), (2, [9; 32])]).expect("valid key set");
    let cipher = Cipher::new(&keys).expect("cipher");
    let _ = Cipher::key_id_of(data);
    assert!(cipher.open(data).is_err(), "random bytes authenticated");
    // A real seal of the input round-trips.
    let mut sealed = Vec::new();
    fjall_seal(&cipher, data, &mut sealed);
    assert_eq!(cipher.open(&sealed).expect("opens"), data);
});

fn fjall_seal(cipher: &Cipher, plain: &[u8], out: &mut Vec<u8>) {
    use fjall::encryption::BlockCipher;
    cipher.encrypt(plain, out).expect("seals");
}
