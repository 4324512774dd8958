//! The one global-memory workspace a [`crate::run::session::Session`] owns for the launches that need
//! one (step 10's stream-K partials and flags, step 11's converted B), handed to each launch as a
//! [`WorkspaceView`] in its [`crate::run::registry::GemmOperands`], with a new epoch.
//!
//! A step whose kernels need workspace says how much for a shape ([`crate::run::registry::Step::workspace`]);
//! the session sizes the workspace when it loads the step, before any launch. A launch takes what it
//! needs with [`WorkspaceView::flags`] and [`WorkspaceView::scratch`], which refuse in one line when
//! the workspace is smaller than that.

use crate::check::problem::Shape;
use crate::error::{Error, Result};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// What a kernel needs of the session's workspace at a shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkspaceNeed {
    /// Bytes of flags: 32-bit words that hold epochs and nothing else (zeroed when the workspace is
    /// allocated; a launch raises a flag to its epoch, so flags are never cleared).
    pub flag_bytes: u64,
    /// Bytes of scratch, which a launch writes before it reads them (partial sums, a converted operand).
    pub scratch_bytes: u64,
}

impl WorkspaceNeed {
    pub const NONE: WorkspaceNeed = WorkspaceNeed {
        flag_bytes: 0,
        scratch_bytes: 0,
    };

    /// Room for both.
    pub fn max(self, other: WorkspaceNeed) -> WorkspaceNeed {
        WorkspaceNeed {
            flag_bytes: self.flag_bytes.max(other.flag_bytes),
            scratch_bytes: self.scratch_bytes.max(other.scratch_bytes),
        }
    }

    /// Where the scratch starts: after the flags, on a 1024-byte boundary (any TMA box and swizzle may
    /// address it); and the bytes in all.
    pub fn layout(&self) -> (u64, u64) {
        let scratch_at = self.flag_bytes.next_multiple_of(WORKSPACE_ALIGN);
        (scratch_at, scratch_at + self.scratch_bytes)
    }

    fn is_none(&self) -> bool {
        *self == WorkspaceNeed::NONE
    }
}

/// Alignment of the scratch within the workspace.
pub const WORKSPACE_ALIGN: u64 = 1024;

/// What a step's kernels need of the workspace at a shape, on a GPU of `sms` SMs (the grid of a
/// persistent kernel is at most one block per SM).
pub type WorkspaceFn = fn(Shape, u32) -> WorkspaceNeed;

/// The session's workspace as one launch sees it: the flags, the scratch after them, and the launch's
/// epoch. All zero ([`Default`]) where there is none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkspaceView {
    /// The flags: `flag_bytes` bytes of 32-bit words holding epochs of earlier launches (or 0).
    pub flags: u64,
    pub flag_bytes: u64,
    /// The scratch: `scratch_bytes` bytes, 1024-byte aligned, of whatever an earlier launch left.
    pub scratch: u64,
    pub scratch_bytes: u64,
    /// This launch's epoch: newer than any earlier launch's in the process, so no flag holds it yet.
    pub epoch: u32,
}

impl WorkspaceView {
    /// The same workspace with a new epoch, for a further launch made within this one's (step 10's
    /// trial launches of its candidate plans): its flags are raised to an epoch no other launch uses.
    pub fn renewed(&self) -> WorkspaceView {
        WorkspaceView {
            epoch: next_epoch(),
            ..*self
        }
    }

    /// The flags' address, if there are at least `bytes` of them; otherwise one line naming `who`.
    pub fn flags(&self, bytes: u64, who: &str) -> Result<u64> {
        self.take(self.flags, self.flag_bytes, bytes, "flags", who)
    }

    /// The scratch's address, if there are at least `bytes` of it; otherwise one line naming `who`.
    pub fn scratch(&self, bytes: u64, who: &str) -> Result<u64> {
        self.take(self.scratch, self.scratch_bytes, bytes, "scratch", who)
    }

    fn take(&self, address: u64, held: u64, bytes: u64, what: &str, who: &str) -> Result<u64> {
        if bytes == 0 {
            return Ok(address);
        }
        if address == 0 || held < bytes {
            return Err(Error::Other(format!(
                "{who} needs {bytes} bytes of workspace {what} at this shape, and the session's workspace has {held}: \
                 its step must say so (Step::workspace), so that the session sizes the workspace before launching"
            )));
        }
        Ok(address)
    }
}

/// The one global-memory workspace of a session: flags first, at fixed places, then scratch
/// ([`WorkspaceNeed::layout`]). Allocated and zeroed on first need, grown (and zeroed again) when a
/// step needs more, never shrunk; the memory is a `CudaSlice`, which holds its context, so it is freed
/// in that context when the session ends. Each launch takes a view with a new epoch
/// ([`Workspace::next_launch`]): flags are raised to epochs, never cleared, and since every launch's
/// epoch is one more than the last launch's in the process (`next_epoch`), a flag left by any
/// earlier launch (of any kernel) holds an older one.
pub struct Workspace {
    memory: Option<CudaSlice<u8>>,
    held: WorkspaceNeed,
}

/// The epochs of the process's launches, counted once for every workspace: a launch may draw more
/// than one ([`WorkspaceView::renewed`]) without a view of the workspace that counts them.
static EPOCHS: AtomicU32 = AtomicU32::new(0);

/// One more than the last launch's epoch (the first is 1: zeroed flags are older than every launch).
fn next_epoch() -> u32 {
    EPOCHS.fetch_add(1, Ordering::Relaxed).wrapping_add(1)
}

impl Default for Workspace {
    fn default() -> Self {
        Workspace::new()
    }
}

impl Workspace {
    pub fn new() -> Workspace {
        Workspace {
            memory: None,
            held: WorkspaceNeed::NONE,
        }
    }

    /// What it holds room for.
    pub fn held(&self) -> WorkspaceNeed {
        self.held
    }

    /// Makes room for `need` on `stream`'s context: nothing when there is room; otherwise the old
    /// memory is freed once the stream's launches are done with it, and memory for both the old and
    /// the new need is allocated and zeroed on `stream` (so before any later launch on it).
    pub fn ensure(&mut self, stream: &Arc<CudaStream>, need: WorkspaceNeed) -> Result<()> {
        let want = self.held.max(need);
        if want == self.held && (self.memory.is_some() || want.is_none()) {
            return Ok(());
        }
        if self.memory.is_some() {
            stream.synchronize().map_err(Error::cuda("waiting for the GPU"))?;
            self.memory = None;
        }
        let (_, bytes) = want.layout();
        let fresh = stream.alloc_zeros::<u8>(bytes as usize).map_err(|e| {
            Error::OutOfMemory(format!(
                "the workspace ({} MiB: {} bytes of flags, {} of scratch) does not fit in the GPU's free memory ({e})",
                bytes.div_ceil(1 << 20),
                want.flag_bytes,
                want.scratch_bytes
            ))
        })?;
        self.memory = Some(fresh);
        self.held = want;
        Ok(())
    }

    /// The workspace for one launch on `stream`, with a new epoch (one more than the last launch's).
    pub fn next_launch(&self, stream: &CudaStream) -> WorkspaceView {
        let epoch = next_epoch();
        match &self.memory {
            None => WorkspaceView {
                epoch,
                ..WorkspaceView::default()
            },
            Some(memory) => {
                let (base, _recorded) = memory.device_ptr(stream);
                let (scratch_at, _) = self.held.layout();
                WorkspaceView {
                    flags: base,
                    flag_bytes: self.held.flag_bytes,
                    scratch: base + scratch_at,
                    scratch_bytes: self.held.scratch_bytes,
                    epoch,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scratch_follows_the_flags_on_a_1024_byte_boundary() {
        let need = WorkspaceNeed {
            flag_bytes: 4 * 128 * 64,
            scratch_bytes: 4096 * 4096 * 2,
        };
        assert_eq!(need.layout(), (32768, 32768 + 4096 * 4096 * 2));
        let odd = WorkspaceNeed {
            flag_bytes: 4,
            scratch_bytes: 10,
        };
        assert_eq!(odd.layout(), (1024, 1034));
        assert_eq!(WorkspaceNeed::NONE.layout(), (0, 0));
        // Growing keeps room for both needs.
        let more = need.max(WorkspaceNeed {
            flag_bytes: 8,
            scratch_bytes: 1 << 30,
        });
        assert_eq!((more.flag_bytes, more.scratch_bytes), (4 * 128 * 64, 1 << 30));
    }

    #[test]
    fn a_launch_takes_what_it_needs_or_refuses_in_one_line() {
        let view = WorkspaceView {
            flags: 0x1000,
            flag_bytes: 64,
            scratch: 0x1400,
            scratch_bytes: 4096,
            epoch: 7,
        };
        assert_eq!(view.flags(64, "step 10").unwrap(), 0x1000);
        assert_eq!(view.scratch(4096, "step 10").unwrap(), 0x1400);
        let refused = view.scratch(4097, "step 10's stream-K").unwrap_err().to_string();
        assert!(
            refused.contains("step 10's stream-K needs 4097 bytes of workspace scratch") && !refused.contains('\n'),
            "{refused}"
        );
        // No workspace at all: nothing needed is fine, anything needed is refused.
        let none = WorkspaceView::default();
        assert_eq!(none.flags(0, "x").unwrap(), 0);
        assert!(none.flags(4, "x").is_err());
    }

    #[test]
    fn every_launch_has_a_new_epoch() {
        // Other tests draw epochs at the same time: each draw is newer than the last, not one more.
        let workspace = Workspace::new();
        let epochs: Vec<u32> = (0..3).map(|_| next_epoch()).collect();
        assert!(
            epochs[0] >= 1 && epochs[0] < epochs[1] && epochs[1] < epochs[2],
            "{epochs:?}"
        );
        assert_eq!(workspace.held(), WorkspaceNeed::NONE);
        // A launch within a launch takes the same workspace with a newer epoch.
        let view = WorkspaceView {
            flags: 0x1000,
            flag_bytes: 64,
            epoch: epochs[2],
            ..WorkspaceView::default()
        };
        let trial = view.renewed();
        assert!(trial.epoch > view.epoch, "{trial:?}");
        assert_eq!(
            WorkspaceView {
                epoch: view.epoch,
                ..trial
            },
            view
        );
    }
}
