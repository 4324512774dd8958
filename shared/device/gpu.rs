//! The GPU: discovery, its facts for the results file ([`DeviceInfo`]), and waiting on it with a
//! deadline.

use crate::device::libs;
use crate::device::nvml::{self, Nvml};
use crate::error::{Error, Result};
use cudarc::driver::sys::{CUdevice_attribute as Attr, CUevent_flags};
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How long one kernel may run before it is reported as hung: 60 s, or `GEMM_LADDER_HANG_SECONDS`.
/// The slowest honest launch in the ladder (the naive kernel at 16384³) takes about 20 s; a kernel
/// waiting on a barrier nobody arrives at waits forever.
pub fn hang_deadline() -> Duration {
    static DEADLINE: OnceLock<Duration> = OnceLock::new();
    *DEADLINE.get_or_init(|| {
        let seconds = std::env::var("GEMM_LADDER_HANG_SECONDS")
            .ok()
            .and_then(|s| s.parse::<f64>().ok());
        Duration::from_secs_f64(seconds.filter(|s| *s > 0.0).unwrap_or(60.0))
    })
}

/// The GPU and software a results file was measured with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// As the driver names it: `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// `9.0`.
    pub compute_capability: String,
    pub sms: u32,
    pub l2_bytes: u64,
    pub memory_bytes: u64,
    /// Maximum SM clock, when the driver reports it.
    pub sm_clock_mhz: Option<u32>,
    /// Maximum memory clock, when the driver reports it.
    pub mem_clock_mhz: Option<u32>,
    /// CUDA driver API version: `13.0`.
    pub driver: String,
    /// NVRTC version: `13.0`.
    pub nvrtc: String,
}

pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub info: DeviceInfo,
    /// Compute capability.
    pub major: u32,
    pub minor: u32,
    pub l2_bytes: u64,
    /// NVML's name for this device (`00000000:19:00.0`), from CUDA's PCI attributes.
    pub pci_bus_id: Option<String>,
    /// NVML, opened on first use by the timing loop.
    nvml: OnceLock<Option<Arc<Nvml>>>,
}

fn version_text(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

impl Gpu {
    /// Opens device 0, or says in one line why it cannot.
    pub fn open() -> Result<Gpu> {
        libs::require_driver()?;
        let count = CudaContext::device_count().map_err(Error::cuda("initialising the driver"))?;
        if count < 1 {
            return Err(Error::NoDevice(count));
        }
        let ctx = CudaContext::new(0).map_err(Error::cuda("creating a context on device 0"))?;
        // One stream, one order of work: the harness needs no cross-stream tracking, and the
        // per-launch events it would record would be timed with the kernels.
        // SAFETY: nothing in this process uses a second stream.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let attr = |a: Attr| ctx.attribute(a).map_err(Error::cuda("reading a device attribute"));
        let major = attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as u32;
        let minor = attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32;
        if let Some(lacks) = crate::device::arch::Arch::lacks(major, minor) {
            return Err(Error::Unsupported {
                step: "gemm-ladder".into(),
                needs: lacks,
                found: format!(
                    "{} (compute capability {major}.{minor})",
                    ctx.name().unwrap_or_else(|_| "this GPU".into())
                ),
            });
        }
        let sms = attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        let l2_bytes = attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64;
        // Peak clocks in kHz; some drivers no longer report them, which the results file records as null.
        let mhz = |a: Attr| ctx.attribute(a).ok().filter(|&k| k > 0).map(|k| (k / 1000) as u32);
        let pci = |a: Attr| ctx.attribute(a).ok().and_then(|v| u32::try_from(v).ok());
        let pci_bus_id = match (
            pci(Attr::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
            pci(Attr::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
            pci(Attr::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID),
        ) {
            (Some(domain), Some(bus), Some(device)) => Some(nvml::pci_bus_id(domain, bus, device)),
            _ => None,
        };
        let mut driver = 0;
        // SAFETY: one out-pointer to a live integer.
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver) };
        let nvrtc = crate::device::nvrtc::version()
            .map(|(a, b)| format!("{a}.{b}"))
            .unwrap_or_else(|_| "absent".into());
        let info = DeviceInfo {
            name: ctx.name().map_err(Error::cuda("reading the device name"))?,
            compute_capability: format!("{major}.{minor}"),
            sms,
            l2_bytes,
            memory_bytes: ctx.total_mem().map_err(Error::cuda("reading the memory size"))? as u64,
            sm_clock_mhz: mhz(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
            mem_clock_mhz: mhz(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
            driver: version_text(driver),
            nvrtc,
        };
        Ok(Gpu {
            ctx,
            stream,
            info,
            major,
            minor,
            l2_bytes,
            pci_bus_id,
            nvml: OnceLock::new(),
        })
    }

    /// NVML for this device, to read its clocks; `None` (said once) without NVML.
    pub fn nvml(&self) -> Option<Arc<Nvml>> {
        self.nvml
            .get_or_init(|| match &self.pci_bus_id {
                Some(bus) => Nvml::open(bus),
                None => {
                    eprintln!("note: CUDA gives no PCI address for this GPU: its clocks during the timing loops are not recorded");
                    None
                }
            })
            .clone()
    }

    /// Free device memory in bytes.
    pub fn free_bytes(&self) -> Result<usize> {
        Ok(self.ctx.mem_get_info().map_err(Error::cuda("reading free memory"))?.0)
    }

    pub fn event(&self) -> Result<CudaEvent> {
        self.ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(Error::cuda("creating an event"))
    }

    /// Waits until everything enqueued so far has finished, or reports `what` as hung.
    pub fn finish(&self, what: &str) -> Result<()> {
        let done = self.event()?;
        done.record(&self.stream).map_err(Error::cuda("recording an event"))?;
        wait_for(&done, what, hang_deadline())?;
        self.ctx.check_err().map_err(Error::cuda(format!("running {what}")))
    }
}

/// The first line of every run on a GPU: the driver (its version and the CUDA it supports), and the
/// NVRTC and cuBLAS this process loaded, each with its file. Loads both, so that a missing library or
/// a version the driver cannot run ends the run here, in one line (`device::libs`).
pub fn cuda_stack_line() -> Result<String> {
    let nvrtc = crate::device::nvrtc::api()?;
    let cublas = crate::device::cublas::api()?;
    Ok(libs::stack_line(
        nvml::driver_version().as_deref(),
        libs::driver_cuda(),
        (&nvrtc.version_text, &nvrtc.path),
        Some((&cublas.version_text, &cublas.path)),
        libs::forced_major()?,
    ))
}

/// Polls `event` until it completes. Past the deadline the process ends at once with the hung
/// message: unwinding would free buffers a running kernel still uses, and the CUDA library's exit
/// handlers would block on the kernel.
pub fn wait_for(event: &CudaEvent, what: &str, deadline: Duration) -> Result<()> {
    let start = Instant::now();
    let mut pause = Duration::from_micros(20);
    loop {
        match event.try_is_complete() {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => return Err(Error::cuda(format!("running {what}"))(e)),
        }
        if start.elapsed() > deadline {
            let hung = Error::Hung {
                what: what.to_string(),
                seconds: deadline.as_secs_f64(),
            };
            eprintln!("error: {hung}");
            // `_exit`, not `exit`: the CUDA library's exit handlers would wait for the kernel that
            // never ends. The driver tears the context (and the kernel) down with the process.
            // SAFETY: ends the process; nothing after this runs.
            unsafe { libc::_exit(hung.exit_code() as i32) };
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(5));
    }
}
