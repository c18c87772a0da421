//! Fuzz target: any bytes given to the TensorBoard event-file reader decode to events or fail
//! with an offset inside the file — never a panic, never an allocation the input did not pay for.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err((offset, _)) = goldgate_core::tensorboard::folder::decode_all(data) {
        assert!(offset < data.len() as u64);
    }
    if let Ok(events) = goldgate_core::tensorboard::folder::decode_all(data) {
        let _ = goldgate_core::tensorboard::accumulate(&events);
    }
});
