//! Memory a training step frees comes back to the next step without page faults
//! (`threads::keep_freed_memory`). A step runs on a pool thread (`threads::in_pool`), so that
//! is where the same large buffers are allocated, filled and freed twice here, and the second
//! round's page faults are counted. A count, not a time: it does not depend on the machine's load.
//!
//! No test harness (Cargo.toml): the allocator's settings only hold for threads started after
//! them, and libtest starts its own threads first.

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn main() {
    use engine::threads::{in_pool, keep_freed_memory};

    /// Minor page faults of the calling thread so far.
    fn faults() -> i64 {
        // SAFETY: rusage is plain integers, for which all-zero bytes are a valid value, and
        // getrusage writes one, which lives for the call.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        assert_eq!(
            unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) },
            0
        );
        usage.ru_minflt
    }
    /// 128 buffers of 1 MiB written and freed: about what a small step allocates (150 MB).
    fn a_step() {
        let buffers: Vec<Vec<f32>> = (0..128).map(|i| vec![i as f32; 1 << 18]).collect();
        assert_eq!(
            buffers.iter().map(|b| b[7]).sum::<f32>(),
            (0..128).sum::<i32>() as f32
        );
    }

    assert!(keep_freed_memory(), "glibc refused a setting");
    let second_step_faults = in_pool(|| {
        a_step();
        let before = faults();
        a_step();
        faults() - before
    });
    // Fresh memory faults once per 4 KiB page: 32 768 for 128 MiB. Reused memory, a few.
    let fresh = (128 << 20) / 4096;
    assert!(
        second_step_faults < fresh / 20,
        "the second step faulted {second_step_faults} pages in (fresh memory: {fresh}): freed memory went back to the OS"
    );
    println!(
        "freed_memory: the second step faulted {second_step_faults} pages in (fresh: {fresh})"
    );
    // libtest's summary line, which `./dev test` adds up.
    println!("test result: ok. 1 passed; 0 failed");
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn main() {}
