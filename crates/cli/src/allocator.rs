//! The `gatehouse` binary's allocator: mimalloc. Under glibc's malloc, allocation was a
//! quarter of an HTTP server's CPU per request and a fifth of a client's
//! (docs/benchmarks.md, "Where the time per call goes"); with mimalloc, `gatehouse serve
//! support --http` answers about a third more requests per second.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_arena_eager_commit` (its place in `mi_option_e`, mimalloc.h).
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;

/// By default mimalloc commits its first arena eagerly on Linux, which added 6 MB to every
/// process's resident set (a server's 8 MiB became 14); committing on demand keeps a
/// process as small as under glibc. The arena is reserved before `main` runs, so the
/// option is set from the program's initialisers (as `MIMALLOC_ARENA_EAGER_COMMIT=0`
/// would).
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static COMMIT_ON_DEMAND: extern "C" fn() = {
    extern "C" fn commit_on_demand() {
        // SAFETY: sets a plain option value, before any arena is reserved.
        unsafe { libmimalloc_sys::mi_option_set(ARENA_EAGER_COMMIT, 0) }
    }
    commit_on_demand
};
