//! The SM clock and power the GPU ran at, read through NVML while a timing loop runs.
//!
//! At large shapes an H100/H200 is power-limited: the driver lowers the SM clock until the board's
//! power fits the limit, so the same kernel runs at different speeds from one second to the next. A
//! ratio to cuBLAS means something only if both saw the same clocks (see [`crate::run::timing`]), and a
//! reader can judge a TFLOPS figure only knowing the clock it was reached at. This module reads that
//! clock: `libnvidia-ml.so.1` (shipped with the driver) is loaded at run time, the device is found by
//! its PCI bus id (CUDA's device numbering and NVML's differ under `CUDA_VISIBLE_DEVICES`), and a host
//! thread samples the SM clock, the power draw and the throttle reasons every [`PERIOD`].
//!
//! Without NVML nothing is recorded and one line says so; nothing here can fail a run.

use libloading::Library;
use serde::{Deserialize, Serialize};
use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the sampler reads the clock while a loop runs.
pub const PERIOD: Duration = Duration::from_millis(20);

/// `nvmlClockType_t::NVML_CLOCK_SM`.
const NVML_CLOCK_SM: c_int = 1;
/// `nvmlClocksEventReasonSwPowerCap`: the driver is holding clocks down to stay within the power limit.
const REASON_SW_POWER_CAP: c_ulonglong = 0x4;
const NVML_SUCCESS: c_int = 0;

type Device = *mut c_void;
type InitFn = unsafe extern "C" fn() -> c_int;
type HandleByBusIdFn = unsafe extern "C" fn(*const c_char, *mut Device) -> c_int;
type ClockFn = unsafe extern "C" fn(Device, c_int, *mut c_uint) -> c_int;
type UintFn = unsafe extern "C" fn(Device, *mut c_uint) -> c_int;
type ReasonsFn = unsafe extern "C" fn(Device, *mut c_ulonglong) -> c_int;

/// NVML, loaded and initialised, with the handle of one device.
pub struct Nvml {
    device: Device,
    clock: ClockFn,
    power: Option<UintFn>,
    power_limit: Option<UintFn>,
    reasons: Option<ReasonsFn>,
    shutdown: Option<InitFn>,
    /// Kept loaded while the function pointers above are in use.
    _lib: Library,
}

// SAFETY: NVML is thread-safe, and a device handle is an opaque token valid in every thread.
unsafe impl Send for Nvml {}
// SAFETY: as above; every call only reads through the handle.
unsafe impl Sync for Nvml {}

impl Drop for Nvml {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown {
            // SAFETY: balances the successful nvmlInit_v2 in `open`.
            unsafe { shutdown() };
        }
    }
}

/// A function of NVML, typed as its header declares it (`T` is one of the `…Fn` types above).
fn symbol<T: Copy>(lib: &Library, name: &[u8]) -> Option<T> {
    // SAFETY: every caller names `T` as the function's C signature in nvml.h.
    unsafe { lib.get::<T>(name).ok().map(|s| *s) }
}

/// NVML's spelling of a PCI address, `%08X:%02X:%02X.0`, from CUDA's PCI domain, bus and device ids.
pub fn pci_bus_id(domain: u32, bus: u32, device: u32) -> String {
    format!("{domain:08X}:{bus:02X}:{device:02X}.0")
}

/// Says once per process that clocks are not recorded, and why.
fn note_absent(why: &str) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| eprintln!("note: {why}: the SM clock and power during the timing loops are not recorded"));
}

impl Nvml {
    /// Loads NVML and finds the device at `pci_bus_id`; `None` (said once) when either is not there.
    pub fn open(pci_bus_id: &str) -> Option<Arc<Nvml>> {
        Self::open_library("libnvidia-ml.so.1", pci_bus_id)
    }

    /// [`Nvml::open`] with the library named (the tests name one that does not exist).
    pub fn open_library(library: &str, pci_bus_id: &str) -> Option<Arc<Nvml>> {
        match Self::try_open(library, pci_bus_id) {
            Ok(nvml) => Some(Arc::new(nvml)),
            Err(why) => {
                note_absent(&why);
                None
            }
        }
    }

    fn try_open(library: &str, pci_bus_id: &str) -> Result<Nvml, String> {
        // SAFETY: loading the driver's NVML runs its initialisers, nothing else.
        let lib = unsafe { Library::new(library) }.map_err(|e| format!("NVML ({library}) not loaded ({e})"))?;
        let init: InitFn = symbol(&lib, b"nvmlInit_v2\0").ok_or("NVML lacks nvmlInit_v2")?;
        let by_bus: HandleByBusIdFn =
            symbol(&lib, b"nvmlDeviceGetHandleByPciBusId_v2\0").ok_or("NVML lacks nvmlDeviceGetHandleByPciBusId_v2")?;
        let clock: ClockFn = symbol(&lib, b"nvmlDeviceGetClockInfo\0").ok_or("NVML lacks nvmlDeviceGetClockInfo")?;
        let power = symbol::<UintFn>(&lib, b"nvmlDeviceGetPowerUsage\0");
        let power_limit = symbol::<UintFn>(&lib, b"nvmlDeviceGetEnforcedPowerLimit\0");
        // Renamed in CUDA 12.2's NVML; the old name is still exported.
        let reasons = symbol::<ReasonsFn>(&lib, b"nvmlDeviceGetCurrentClocksEventReasons\0")
            .or_else(|| symbol(&lib, b"nvmlDeviceGetCurrentClocksThrottleReasons\0"));
        let shutdown = symbol::<InitFn>(&lib, b"nvmlShutdown\0");

        // SAFETY: no arguments; NVML counts initialisations and `Drop` balances this one.
        let status = unsafe { init() };
        if status != NVML_SUCCESS {
            return Err(format!("NVML did not initialise (status {status})"));
        }
        let mut nvml = Nvml {
            device: std::ptr::null_mut(),
            clock,
            power,
            power_limit,
            reasons,
            shutdown,
            _lib: lib,
        };
        let bus = CString::new(pci_bus_id).map_err(|_| format!("bad PCI bus id {pci_bus_id:?}"))?;
        let mut device: Device = std::ptr::null_mut();
        // SAFETY: a NUL-terminated string and one out-pointer.
        let status = unsafe { by_bus(bus.as_ptr(), &mut device) };
        if status != NVML_SUCCESS {
            // `nvml` drops here, shutting NVML down again.
            return Err(format!(
                "NVML does not know the device at PCI {pci_bus_id} (status {status})"
            ));
        }
        nvml.device = device;
        Ok(nvml)
    }

    fn read_uint(&self, f: Option<UintFn>) -> Option<u32> {
        let f = f?;
        let mut value: c_uint = 0;
        // SAFETY: our device handle and one out-pointer.
        (unsafe { f(self.device, &mut value) } == NVML_SUCCESS).then_some(value)
    }

    /// One reading of the device now.
    pub fn sample(&self) -> Sample {
        let mut mhz: c_uint = 0;
        // SAFETY: our device handle, a valid clock type and one out-pointer.
        let sm_mhz = (unsafe { (self.clock)(self.device, NVML_CLOCK_SM, &mut mhz) } == NVML_SUCCESS).then_some(mhz);
        let power_capped = self.reasons.and_then(|f| {
            let mut reasons: c_ulonglong = 0;
            // SAFETY: our device handle and one out-pointer.
            (unsafe { f(self.device, &mut reasons) } == NVML_SUCCESS).then_some(reasons & REASON_SW_POWER_CAP != 0)
        });
        Sample {
            sm_mhz,
            power_mw: self.read_uint(self.power),
            power_capped,
        }
    }

    /// The power limit the driver enforces now, in milliwatts.
    pub fn power_limit_mw(&self) -> Option<u32> {
        self.read_uint(self.power_limit)
    }
}

/// The driver's version as NVML gives it (`580.65.06`), or `None` without NVML. Says nothing when
/// absent: the first line of a run then names the driver by the CUDA version it supports.
pub fn driver_version() -> Option<String> {
    type VersionFn = unsafe extern "C" fn(*mut c_char, c_uint) -> c_int;
    // SAFETY: loading the driver's NVML runs its initialisers, nothing else.
    let lib = unsafe { Library::new("libnvidia-ml.so.1") }.ok()?;
    let init: InitFn = symbol(&lib, b"nvmlInit_v2\0")?;
    let version: VersionFn = symbol(&lib, b"nvmlSystemGetDriverVersion\0")?;
    let shutdown: Option<InitFn> = symbol(&lib, b"nvmlShutdown\0");
    // SAFETY: no arguments; balanced by the shutdown below.
    if unsafe { init() } != NVML_SUCCESS {
        return None;
    }
    let mut buffer = [0 as c_char; 96];
    // SAFETY: a buffer of the stated length, which NVML NUL-terminates.
    let status = unsafe { version(buffer.as_mut_ptr(), buffer.len() as c_uint) };
    let text = (status == NVML_SUCCESS).then(|| {
        // SAFETY: NUL-terminated by NVML on success.
        unsafe { std::ffi::CStr::from_ptr(buffer.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    });
    if let Some(shutdown) = shutdown {
        // SAFETY: balances the successful init above.
        unsafe { shutdown() };
    }
    text
}

/// One reading: each part `None` when NVML would not give it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Sample {
    pub sm_mhz: Option<u32>,
    pub power_mw: Option<u32>,
    /// Whether the driver was holding the clocks down for the power limit.
    pub power_capped: Option<bool>,
}

/// What the samples of one timing loop say, as recorded with the step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockSummary {
    /// Readings of the SM clock taken while the timed launches ran (one every ~20 ms).
    pub samples: u32,
    pub sm_mhz_min: u32,
    pub sm_mhz_median: u32,
    pub sm_mhz_max: u32,
    /// Mean board power over the samples, in watts.
    pub power_w_mean: Option<f64>,
    /// The power limit the driver enforced, in watts.
    pub power_limit_w: Option<f64>,
    /// Share of the samples (0 to 1) in which the driver held the clocks down for the power limit.
    pub power_capped_fraction: Option<f64>,
}

impl ClockSummary {
    /// Summarises samples; `None` when no sample holds an SM clock.
    pub fn from_samples(samples: &[Sample], power_limit_mw: Option<u32>) -> Option<ClockSummary> {
        let mut mhz: Vec<u32> = samples.iter().filter_map(|s| s.sm_mhz).collect();
        if mhz.is_empty() {
            return None;
        }
        mhz.sort_unstable();
        let n = mhz.len();
        // The lower middle of an even count: a clock the GPU actually ran at.
        let median = mhz[(n - 1) / 2];
        let power: Vec<f64> = samples
            .iter()
            .filter_map(|s| s.power_mw)
            .map(|mw| mw as f64 / 1e3)
            .collect();
        let capped: Vec<bool> = samples.iter().filter_map(|s| s.power_capped).collect();
        Some(ClockSummary {
            samples: n as u32,
            sm_mhz_min: mhz[0],
            sm_mhz_median: median,
            sm_mhz_max: mhz[n - 1],
            power_w_mean: (!power.is_empty()).then(|| power.iter().sum::<f64>() / power.len() as f64),
            power_limit_w: power_limit_mw.map(|mw| mw as f64 / 1e3),
            power_capped_fraction: (!capped.is_empty())
                .then(|| capped.iter().filter(|c| **c).count() as f64 / capped.len() as f64),
        })
    }

    /// `1755 MHz (1590–1980)`, or just `1980 MHz` when the clock never moved.
    pub fn sm_text(&self) -> String {
        if self.sm_mhz_min == self.sm_mhz_max {
            format!("{} MHz", self.sm_mhz_median)
        } else {
            format!("{} MHz ({}–{})", self.sm_mhz_median, self.sm_mhz_min, self.sm_mhz_max)
        }
    }

    /// `652 W of 700 W, power-capped 93% of the time`, as much of it as was read.
    pub fn power_text(&self) -> String {
        let mut text = match (self.power_w_mean, self.power_limit_w) {
            (Some(mean), Some(limit)) => format!("{mean:.0} W of {limit:.0} W"),
            (Some(mean), None) => format!("{mean:.0} W"),
            (None, Some(limit)) => format!("limit {limit:.0} W"),
            (None, None) => String::new(),
        };
        if let Some(fraction) = self.power_capped_fraction {
            if !text.is_empty() {
                text.push_str(", ");
            }
            text.push_str(&format!("power-capped {:.0}% of the time", fraction * 100.0));
        }
        text
    }
}

/// A host thread reading the device every [`PERIOD`] until stopped.
pub struct Sampler {
    nvml: Arc<Nvml>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<Sample>>>,
}

impl Sampler {
    /// Starts sampling now (one reading at once, then one per period).
    pub fn start(nvml: Arc<Nvml>) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (nvml, stop) = (nvml.clone(), stop.clone());
            std::thread::Builder::new()
                .name("nvml-sampler".into())
                .spawn(move || {
                    let mut samples = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        samples.push(nvml.sample());
                        std::thread::park_timeout(PERIOD);
                    }
                    samples
                })
                .ok()
        };
        Sampler { nvml, stop, thread }
    }

    /// Stops the thread (taking one last reading) and summarises what it read.
    pub fn finish(mut self) -> Option<ClockSummary> {
        let mut samples = self.stop_thread();
        samples.push(self.nvml.sample());
        ClockSummary::from_samples(&samples, self.nvml.power_limit_mw())
    }

    fn stop_thread(&mut self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(thread) => {
                thread.thread().unpark();
                thread.join().unwrap_or_default()
            }
            None => Vec::new(),
        }
    }
}

impl Drop for Sampler {
    /// A loop that fails part-way still stops its sampler.
    fn drop(&mut self) {
        self.stop_thread();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(mhz: u32, mw: u32, capped: bool) -> Sample {
        Sample {
            sm_mhz: Some(mhz),
            power_mw: Some(mw),
            power_capped: Some(capped),
        }
    }

    #[test]
    fn pci_bus_ids_are_written_as_nvml_expects() {
        assert_eq!(pci_bus_id(0, 0x19, 0), "00000000:19:00.0");
        assert_eq!(pci_bus_id(1, 0xab, 0x1f), "00000001:AB:1F.0");
    }

    #[test]
    fn a_missing_library_records_nothing_and_does_not_panic() {
        assert!(Nvml::open_library("libnvidia-ml-that-is-not-there.so.1", "00000000:19:00.0").is_none());
        // Twice: the note is printed once, and nothing else changes.
        assert!(Nvml::open_library("libnvidia-ml-that-is-not-there.so.1", "00000000:19:00.0").is_none());
    }

    #[test]
    fn summaries_of_clock_samples() {
        let samples = [
            at(1980, 500_000, false),
            at(1755, 700_000, true),
            at(1590, 690_000, true),
            at(1800, 710_000, true),
        ];
        let s = ClockSummary::from_samples(&samples, Some(700_000)).unwrap();
        assert_eq!(
            (s.samples, s.sm_mhz_min, s.sm_mhz_median, s.sm_mhz_max),
            (4, 1590, 1755, 1980)
        );
        assert!((s.power_w_mean.unwrap() - 650.0).abs() < 1e-9);
        assert_eq!(s.power_limit_w, Some(700.0));
        assert_eq!(s.power_capped_fraction, Some(0.75));
        assert_eq!(s.sm_text(), "1755 MHz (1590–1980)");
        assert_eq!(s.power_text(), "650 W of 700 W, power-capped 75% of the time");

        // Parts NVML would not give are left out, not made up.
        let bare = [Sample {
            sm_mhz: Some(1980),
            ..Sample::default()
        }];
        let s = ClockSummary::from_samples(&bare, None).unwrap();
        assert_eq!(
            (s.power_w_mean, s.power_limit_w, s.power_capped_fraction),
            (None, None, None)
        );
        assert_eq!((s.sm_text(), s.power_text()), ("1980 MHz".to_string(), String::new()));
        assert!(ClockSummary::from_samples(&[Sample::default()], Some(700_000)).is_none());
        assert!(ClockSummary::from_samples(&[], None).is_none());
    }
}
