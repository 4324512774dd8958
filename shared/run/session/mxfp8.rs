//! Step 11's additions to the session: the MXFP8 inputs (quantized once, uploaded in copies), the
//! fp32 output, the checks of an MXFP8 step and its baselines (cuBLAS writing fp32 C and bf16 C on the
//! dequantized operands, "dequantize, then cuBLAS (fp32 C)", cuBLASLt fp8 tensorwise).

use super::{load_file, ptr, Session, StepTiming};
use crate::check::mx::{self, MxInputs};
use crate::check::problem::Shape;
use crate::check::verify::{self, Bounds, Check, Reference};
use crate::device::cublas::{Fp8Output, Fp8Tensorwise};
use crate::device::gpu::Gpu;
use crate::error::{Error, Result};
use crate::run::registry::{Format, GemmOperands, KernelFile, LaunchFn, Step, Targets};
use crate::run::results::MxBaselines;
use crate::run::steps;
use crate::run::timing::{self, Contender};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DevicePtr};
use half::bf16;
use half::slice::HalfFloatSliceExt;
use std::collections::HashMap;

/// fp32 NaN, the poison of an fp32 `C` (step 11).
const POISON_F32: u32 = 0x7FC0_0000;

/// Step 11's side of a session. Its inputs are the session's bf16 inputs, quantized on the CPU
/// ([`MxInputs`]); the e4m3 bytes and blocked scales are what an MXFP8 step reads, and the exactly
/// dequantized bf16 copies are what step 10 and cuBLAS bf16 run on, so that every comparison and
/// every baseline computes the same product. Rotated through in copies, like the bf16 inputs.
pub(super) struct MxState {
    inputs: MxInputs,
    a: Vec<CudaSlice<u8>>,
    b: Vec<CudaSlice<u8>>,
    scale_a: Vec<CudaSlice<u8>>,
    scale_b: Vec<CudaSlice<u8>>,
    a_bf16: Vec<CudaSlice<u16>>,
    b_bf16: Vec<CudaSlice<u16>>,
    /// fp32 `C`: the MXFP8 steps', cuBLAS fp32-out's and cuBLASLt fp8's output.
    c: CudaSlice<f32>,
    /// Where the "dequantize, then cuBLAS (fp32 C)" baseline dequantizes to (never read back).
    staging_a: CudaSlice<u16>,
    staging_b: CudaSlice<u16>,
    /// MXFP8 steps' outputs, and bf16 steps' outputs on the dequantized operands.
    outputs: HashMap<u8, Vec<f32>>,
    bf16_outputs: HashMap<u8, Vec<bf16>>,
    cublas_bf16: Option<Vec<bf16>>,
    cublas_f32: Option<Vec<f32>>,
    reference: Option<Reference>,
    dequantize: Option<CudaFunction>,
    /// cuBLASLt fp8 tensorwise, or why it could not be set up (e.g. a shape it does not serve).
    fp8: Option<std::result::Result<Fp8Tensorwise, String>>,
}

impl MxState {
    /// Forgets the steps' outputs (the session now runs another twin's kernels); the inputs stay.
    pub(super) fn forget_step_outputs(&mut self) {
        self.outputs.clear();
        self.bf16_outputs.clear();
    }
}

/// `copies` device copies of `host`: one upload, then device-to-device copies.
fn replicate<T: cudarc::driver::DeviceRepr>(
    gpu: &Gpu,
    host: &[T],
    copies: usize,
    what: &str,
) -> Result<Vec<CudaSlice<T>>> {
    let first = gpu
        .stream
        .clone_htod(host)
        .map_err(Error::cuda(format!("uploading {what}")))?;
    let mut all = vec![first];
    for _ in 1..copies {
        let copy = gpu
            .stream
            .clone_dtod(&all[0])
            .map_err(Error::cuda(format!("copying {what}")))?;
        all.push(copy);
    }
    Ok(all)
}

/// Step 11: the MXFP8 problem, its checks and its baselines.
impl Session {
    /// Quantizes the inputs (on the CPU, [`MxInputs::from_inputs`]) and uploads the e4m3 bytes, the
    /// blocked scales and the dequantized bf16 operands, once: copies, no kernel. The shape must
    /// satisfy the MX rule.
    pub fn ensure_mx(&mut self) -> Result<()> {
        if self.mx.is_some() {
            return Ok(());
        }
        Format::Mxfp8.check(self.shape, "the MXFP8 inputs")?;
        let Shape { m, n, k } = self.shape;
        let copies = self.device.a.len();
        let per_copy = 3 * (m + n) * k + mx::blocked_len(m, k / 32) + mx::blocked_len(n, k / 32);
        let needed = (copies * per_copy + 4 * m * n + 2 * (m + n) * k) as u64;
        let free = self.gpu.free_bytes()? as u64;
        if needed > free * 9 / 10 {
            return Err(Error::OutOfMemory(format!(
                "the MXFP8 inputs of {} with {copies} copies need {:.1} GiB, the GPU has {:.1} GiB free",
                self.shape,
                needed as f64 / (1u64 << 30) as f64,
                free as f64 / (1u64 << 30) as f64
            )));
        }
        let inputs = MxInputs::from_inputs(&self.inputs);
        let gpu = &self.gpu;
        let a = replicate(gpu, &inputs.a.elements, copies, "e4m3 A")?;
        let b = replicate(gpu, &inputs.b.elements, copies, "e4m3 B")?;
        let scale_a = replicate(gpu, &inputs.a_scales_blocked(), copies, "A's scales")?;
        let scale_b = replicate(gpu, &inputs.b_scales_blocked(), copies, "B's scales")?;
        let a_bf16 = replicate(gpu, inputs.a_bf16.reinterpret_cast(), copies, "dequantized A")?;
        let b_bf16 = replicate(gpu, inputs.b_bf16.reinterpret_cast(), copies, "dequantized B")?;
        let alloc = |len: usize, what: &str| -> Result<CudaSlice<u16>> {
            // SAFETY: written by the dequantize kernel before anything reads it (nothing does).
            unsafe { gpu.stream.alloc::<u16>(len) }.map_err(Error::cuda(format!("allocating {what}")))
        };
        let (staging_a, staging_b) = (alloc(m * k, "dequantize A")?, alloc(n * k, "dequantize B")?);
        // SAFETY: poisoned before every use that is read back.
        let c = unsafe { gpu.stream.alloc::<f32>(m * n) }.map_err(Error::cuda("allocating fp32 C"))?;
        self.mx = Some(MxState {
            inputs,
            a,
            b,
            scale_a,
            scale_b,
            a_bf16,
            b_bf16,
            c,
            staging_a,
            staging_b,
            outputs: HashMap::new(),
            bf16_outputs: HashMap::new(),
            cublas_bf16: None,
            cublas_f32: None,
            reference: None,
            dequantize: None,
            fp8: None,
        });
        Ok(())
    }

    fn mx_state(&self) -> Result<&MxState> {
        self.mx
            .as_ref()
            .ok_or_else(|| Error::Other("the MXFP8 inputs are not made yet".into()))
    }

    /// An MXFP8 step's operands on input set `set`: e4m3 `A`, `B`, blocked scales, fp32 `C` (made by
    /// the first MXFP8 run of this session, e.g. [`Session::run_mx_function`]).
    pub fn mx_operands(&self, set: usize) -> Result<GemmOperands> {
        let mx = self.mx_state()?;
        let set = set % mx.a.len();
        Ok(GemmOperands {
            a: ptr(&mx.a[set], &self.gpu),
            b: ptr(&mx.b[set], &self.gpu),
            c: ptr(&mx.c, &self.gpu),
            scale_a: ptr(&mx.scale_a[set], &self.gpu),
            scale_b: ptr(&mx.scale_b[set], &self.gpu),
            workspace: self.workspace.next_launch(&self.gpu.stream),
            shape: self.shape,
        })
    }

    /// A bf16 step's operands holding the MXFP8 inputs, exactly dequantized, on input set `set`.
    fn dequantized_operands(&self, set: usize) -> Result<GemmOperands> {
        let mx = self.mx_state()?;
        let set = set % mx.a_bf16.len();
        Ok(GemmOperands {
            a: ptr(&mx.a_bf16[set], &self.gpu),
            b: ptr(&mx.b_bf16[set], &self.gpu),
            c: ptr(&self.c, &self.gpu),
            scale_a: 0,
            scale_b: 0,
            workspace: self.workspace.next_launch(&self.gpu.stream),
            shape: self.shape,
        })
    }

    /// Enqueues cuBLAS on the dequantized MXFP8 inputs of set `set` writing fp32 C, as an MXFP8 step
    /// does: its like-for-like baseline ([`crate::run::results::Baseline::CublasF32C`]).
    pub fn launch_cublas_f32_c_dequantized(&self, set: usize) -> Result<()> {
        let ops = self.dequantized_operands(set)?;
        let c32 = ptr(&self.mx_state()?.c, &self.gpu);
        self.cublas.gemm_bf16_f32_out(ops.a, ops.b, c32, self.shape)
    }

    fn poison_c_f32(&self) -> Result<()> {
        let mx = self.mx_state()?;
        let (address, _sync) = mx.c.device_ptr(&self.gpu.stream);
        // SAFETY: fills exactly fp32 C's elements, on our stream.
        unsafe { cudarc::driver::sys::cuMemsetD32Async(address, POISON_F32, mx.c.len(), self.gpu.stream.cu_stream()) }
            .result()
            .map_err(Error::cuda("poisoning fp32 C"))
    }

    fn read_c_f32(&self, what: &str) -> Result<Vec<f32>> {
        self.gpu.finish(what)?;
        self.gpu
            .stream
            .clone_dtoh(&self.mx_state()?.c)
            .map_err(Error::cuda(format!("reading back {what}")))
    }

    /// MXFP8 step `id`'s fp32 output on the first input set, computed once.
    pub fn mx_output_of(&mut self, id: u8) -> Result<&[f32]> {
        self.ensure_mx()?;
        if !self.mx_state()?.outputs.contains_key(&id) {
            self.kernel(id)?;
            self.poison_c_f32()?;
            let ops = self.mx_operands(0)?;
            let kernel = &self.kernels[&id];
            let what = kernel.step.binary();
            (kernel.file.launch)(&kernel.function, &self.gpu.stream, &ops)?;
            let out = self.read_c_f32(&what)?;
            self.mx.as_mut().expect("made above").outputs.insert(id, out);
        }
        Ok(&self.mx_state()?.outputs[&id])
    }

    /// Runs any loaded MX kernel with `launch` on the MXFP8 inputs and returns its fp32 output (the
    /// tests feed the checker deliberately wrong MX kernels with it).
    pub fn run_mx_function(&mut self, function: &CudaFunction, launch: LaunchFn, what: &str) -> Result<Vec<f32>> {
        self.ensure_mx()?;
        self.ensure_workspace_for(Format::Mxfp8)?;
        self.poison_c_f32()?;
        let ops = self.mx_operands(0)?;
        launch(function, &self.gpu.stream, &ops)?;
        self.read_c_f32(what)
    }

    /// bf16 step `id`'s output on the dequantized MXFP8 inputs, computed once.
    pub fn output_on_dequantized(&mut self, id: u8) -> Result<&[bf16]> {
        self.ensure_mx()?;
        if !self.mx_state()?.bf16_outputs.contains_key(&id) {
            self.kernel(id)?;
            self.poison_c()?;
            let ops = self.dequantized_operands(0)?;
            let kernel = &self.kernels[&id];
            let what = format!("{} on the dequantized MXFP8 inputs", kernel.step.binary());
            (kernel.file.launch)(&kernel.function, &self.gpu.stream, &ops)?;
            let out = self.read_c(&what)?;
            self.mx.as_mut().expect("made above").bf16_outputs.insert(id, out);
        }
        Ok(&self.mx_state()?.bf16_outputs[&id])
    }

    /// cuBLAS bf16 (bf16 `C`) and cuBLAS with fp32 `C`, both on the dequantized MXFP8 inputs, once.
    fn mx_cublas_outputs(&mut self) -> Result<(Vec<bf16>, Vec<f32>)> {
        self.ensure_mx()?;
        if self.mx_state()?.cublas_bf16.is_none() {
            let ops = self.dequantized_operands(0)?;
            self.poison_c()?;
            self.cublas.gemm_bf16(ops.a, ops.b, ops.c, self.shape)?;
            let bf16_out = self.read_c("cuBLAS bf16 on the dequantized MXFP8 inputs")?;
            self.poison_c_f32()?;
            let c32 = ptr(&self.mx_state()?.c, &self.gpu);
            self.cublas.gemm_bf16_f32_out(ops.a, ops.b, c32, self.shape)?;
            let f32_out = self.read_c_f32("cuBLAS (fp32 C) on the dequantized MXFP8 inputs")?;
            let mx = self.mx.as_mut().expect("made above");
            mx.cublas_bf16 = Some(bf16_out);
            mx.cublas_f32 = Some(f32_out);
        }
        let mx = self.mx_state()?;
        Ok((
            mx.cublas_bf16.clone().expect("computed"),
            mx.cublas_f32.clone().expect("computed"),
        ))
    }

    /// The exact product of the MXFP8 inputs ([`mx::reference`]: full or sampled), once.
    fn mx_reference(&mut self) -> Result<Reference> {
        self.ensure_mx()?;
        let mx = self.mx.as_mut().expect("made above");
        if mx.reference.is_none() {
            mx.reference = Some(mx::reference(&mx.inputs.a, &mx.inputs.b));
        }
        Ok(mx.reference.clone().expect("computed"))
    }

    /// The checks of an MXFP8 step, on its fp32 output:
    /// - its predecessor (step 10) run on the exactly dequantized operands, bf16 `C`
    ///   ([`Bounds::f32_vs_bf16`]);
    /// - cuBLAS bf16 on the same operands ([`Bounds::f32_vs_bf16`]);
    /// - cuBLAS with fp32 `C` on the same operands ([`Bounds::f32_vs_f32`], the tight one);
    /// - the exact MX product in f64, sampled for large shapes ([`Bounds::f32_vs_exact`]).
    pub(super) fn verify_mx(&mut self, step: &'static Step) -> Result<Vec<Check>> {
        step.format.check(self.shape, &step.binary())?;
        let got = self.mx_output_of(step.id)?.to_vec();
        self.check_mx_output(step.predecessor, &got)
    }

    /// The checks of [`Session::verify`] for an MXFP8 step, on any fp32 output `got` of the MXFP8
    /// inputs (the tests feed it deliberately wrong kernels' outputs): against `predecessor` run on
    /// the dequantized operands, cuBLAS bf16 and fp32-out on them, and the exact MX product.
    pub fn check_mx_output(&mut self, predecessor: Option<u8>, got: &[f32]) -> Result<Vec<Check>> {
        let shape = self.shape;
        let mut checks = Vec::new();
        if let Some(previous) = predecessor {
            let check = match steps::get(previous)?.format {
                Format::Bf16 => {
                    let against = format!("step{previous:02} (dequantized)");
                    let reference = Reference::Bf16(self.output_on_dequantized(previous)?.to_vec());
                    verify::compare(&against, got, &reference, shape, &Bounds::f32_vs_bf16())
                }
                Format::Mxfp8 => {
                    let against = format!("step{previous:02}");
                    let reference =
                        Reference::F64(self.mx_output_of(previous)?.iter().map(|&v| f64::from(v)).collect());
                    verify::compare(&against, got, &reference, shape, &Bounds::f32_vs_f32())
                }
            };
            checks.push(check);
        }
        let (cublas_bf16, cublas_f32) = self.mx_cublas_outputs()?;
        checks.push(verify::compare(
            "cuBLAS bf16 (dequantized)",
            got,
            &Reference::Bf16(cublas_bf16),
            shape,
            &Bounds::f32_vs_bf16(),
        ));
        checks.push(verify::compare(
            "cuBLAS fp32 C (dequantized)",
            got,
            &Reference::F64(cublas_f32.iter().map(|&v| f64::from(v)).collect()),
            shape,
            &Bounds::f32_vs_f32(),
        ));
        let reference = self.mx_reference()?;
        checks.push(verify::compare(
            "MX f64",
            got,
            &reference,
            shape,
            &Bounds::f32_vs_exact(),
        ));
        Ok(checks)
    }

    /// Loads the dequantize kernel and sets up cuBLASLt fp8 (or notes why not), once.
    fn ensure_mx_baselines(&mut self) -> Result<()> {
        self.ensure_mx()?;
        if self.mx_state()?.dequantize.is_none() {
            let (function, _) = load_file(&self.gpu, &DEQUANT_KERNEL)?;
            self.mx.as_mut().expect("made above").dequantize = Some(function);
        }
        if self.mx_state()?.fp8.is_none() {
            // Set up with fp32 C, and try it once; where cuBLASLt refuses (it may serve fp8 only with
            // a 16-bit C), fall back to bf16 C; the record says which, or why neither ran.
            let ops = self.mx_operands(0)?;
            let mut refusals = Vec::new();
            let mut chosen = None;
            for output in [Fp8Output::F32, Fp8Output::Bf16] {
                let tried = Fp8Tensorwise::new(self.gpu.stream.clone(), self.shape, output)
                    .and_then(|fp8| fp8.gemm(ops.a, ops.b, ops.c).map(|_| fp8))
                    .and_then(|fp8| self.gpu.finish("cuBLASLt fp8").map(|_| fp8));
                match tried {
                    Ok(fp8) => {
                        chosen = Some(fp8);
                        break;
                    }
                    Err(e) => refusals.push(format!("{} C: {e}", output.name())),
                }
            }
            let fp8 = chosen.ok_or_else(|| refusals.join("; "));
            self.mx.as_mut().expect("made above").fp8 = Some(fp8);
        }
        Ok(())
    }

    /// Times MXFP8 step `id` in one alternating loop with its baselines: cuBLAS on the dequantized
    /// operands writing fp32 C, as the step does (the headline: [`crate::run::results::Baseline::CublasF32C`]), the same
    /// writing bf16 C (`ratio_bf16` is to this one), "dequantize, then cuBLAS (fp32 C)" (the dequantize
    /// kernel on A and on B, then cuBLAS, timed together as one contender), and cuBLASLt fp8
    /// tensorwise on the same e4m3 bytes with tensor scales of 1, when cuBLASLt serves the shape.
    pub(super) fn time_mx_step(&mut self, id: u8, iters: Option<u32>) -> Result<StepTiming> {
        self.ensure_mx_baselines()?;
        self.prepare_ceiling(id)?;
        let what = self.kernel(id)?.step.binary();
        let this = &*self;
        let mx = this.mx_state()?;
        let shape = this.shape;
        let dequantize = mx.dequantize.as_ref().expect("loaded above");
        let fp8 = match mx.fp8.as_ref().expect("set up above") {
            Ok(fp8) => Ok(fp8),
            Err(why) => Err(why.clone()),
        };
        let c32 = ptr(&mx.c, &this.gpu);
        let mut step = |i: usize| this.launch(id, i);
        let mut f32_c = |i: usize| this.launch_cublas_f32_c_dequantized(i);
        let mut bf16_c = |i: usize| {
            let ops = this.dequantized_operands(i)?;
            this.cublas.gemm_bf16(ops.a, ops.b, ops.c, shape)
        };
        let mut dequantize_then_cublas = |i: usize| {
            let ops = this.mx_operands(i)?;
            let (a, b) = (ptr(&mx.staging_a, &this.gpu), ptr(&mx.staging_b, &this.gpu));
            launch_dequantize(dequantize, &this.gpu.stream, ops.a, ops.scale_a, a, shape.m, shape.k)?;
            launch_dequantize(dequantize, &this.gpu.stream, ops.b, ops.scale_b, b, shape.n, shape.k)?;
            this.cublas.gemm_bf16_f32_out(a, b, c32, shape)
        };
        let mut tensorwise = |i: usize| {
            let ops = this.mx_operands(i)?;
            match &fp8 {
                Ok(fp8) => fp8.gemm(ops.a, ops.b, ops.c),
                Err(why) => Err(Error::Other(why.clone())),
            }
        };
        let (alternatives, mut alternative_launches) = this.alternative_launches(id);
        let mut contenders = vec![
            Contender {
                name: &what,
                launch: &mut step,
            },
            Contender {
                name: "cuBLAS (fp32 C, dequantized)",
                launch: &mut f32_c,
            },
            Contender {
                name: "cuBLAS (bf16 C, dequantized)",
                launch: &mut bf16_c,
            },
            Contender {
                name: "dequantize + cuBLAS (fp32 C)",
                launch: &mut dequantize_then_cublas,
            },
        ];
        if fp8.is_ok() {
            contenders.push(Contender {
                name: "cuBLASLt fp8 tensorwise",
                launch: &mut tensorwise,
            });
        }
        let probes = this.ceiling.as_ref();
        let (mut on_ldmatrix, mut on_registers) = this.ceiling_launches();
        if probes.is_some() {
            contenders.push(Contender {
                name: crate::run::ceiling::Probes::LDMATRIX_NAME,
                launch: &mut on_ldmatrix,
            });
            contenders.push(Contender {
                name: crate::run::ceiling::Probes::REGISTERS_NAME,
                launch: &mut on_registers,
            });
        }
        for (launch, name) in alternative_launches.iter_mut().zip(&alternatives) {
            contenders.push(Contender { name, launch });
        }
        let measured = timing::measure(&this.gpu, shape, iters, &mut contenders)?;
        let mut timings = measured.timings;
        let alternative_timings = timings.split_off(timings.len() - alternatives.len());
        let ceiling_timings = timings.split_off(timings.len() - if probes.is_some() { 2 } else { 0 });
        let mut timings = timings.into_iter();
        let (Some(step), Some(cublas_f32_c), Some(cublas_bf16), Some(dequantized)) =
            (timings.next(), timings.next(), timings.next(), timings.next())
        else {
            return Err(Error::Other(format!("{what}: the timing loop lost a contender")));
        };
        let fp8_timing = timings.next();
        let mma_sync_ceiling = probes
            .zip(ceiling_timings.get(..2))
            .map(|(probes, ceiling)| probes.record(&ceiling[0], &ceiling[1], &cublas_bf16, measured.clocks.clone()));
        let baselines = MxBaselines {
            quantizer: MxBaselines::QUANTIZER.to_string(),
            ratio_cublas_f32_c: Some(step.tflops / cublas_f32_c.tflops),
            cublas_f32_c: Some(cublas_f32_c),
            ratio_dequantize_then_cublas: step.tflops / dequantized.tflops,
            dequantize_then_cublas: dequantized,
            dequantize_then_cublas_output: "fp32".to_string(),
            ratio_cublaslt_fp8_tensorwise: fp8_timing.as_ref().map(|t| step.tflops / t.tflops),
            cublaslt_fp8_tensorwise: fp8_timing,
            cublaslt_fp8_output: fp8.as_ref().map(|f| f.output.name()).unwrap_or("none").to_string(),
            cublaslt_fp8_unavailable: fp8.err(),
        };
        Ok(StepTiming {
            step,
            cublas_bf16,
            cublas_sgemm: None,
            clocks: measured.clocks,
            warmup_ms: measured.warmup_ms,
            mma_sync_ceiling,
            mx: Some(baselines),
            alternatives: alternative_timings,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The dequantize kernel (the "dequantize, then cuBLAS (fp32 C)" baseline)
// ---------------------------------------------------------------------------------------------

/// `shared/check/mx_dequant.cu` (beside the quantizer it inverts): e4m3 + blocked e8m0 → bf16, one pass over one operand. Not a GEMM: it is
/// launched with [`launch_dequantize`], never through `launch`.
pub const DEQUANT_KERNEL: KernelFile = KernelFile {
    path: "shared/check/mx_dequant.cu",
    source: include_str!("../../check/mx_dequant.cu"),
    targets: Targets::AnyGpu,
    entry: "mx_dequantize",
    defines: &[],
    max_dynamic_smem: 0,
    launch: not_a_gemm,
};

fn not_a_gemm(_: &CudaFunction, _: &CudaStream, _: &GemmOperands) -> crate::error::Result<()> {
    Err(crate::error::Error::Other(
        "mx_dequantize is not a GEMM: launch it with session::mxfp8::launch_dequantize".into(),
    ))
}

/// Threads per block of the dequantize kernel; each converts 8 elements.
const DEQUANT_THREADS: u32 = 256;

/// Enqueues the dequantization of a `rows`×`k` MX operand (`q`: e4m3 bytes, `scales`: blocked e8m0)
/// into `out` (`rows`×`k` bf16).
pub fn launch_dequantize(
    function: &CudaFunction,
    stream: &CudaStream,
    q: u64,
    scales: u64,
    out: u64,
    rows: usize,
    k: usize,
) -> crate::error::Result<()> {
    use cudarc::driver::{LaunchConfig, PushKernelArg};
    let threads = (rows * (k / 8)) as u64;
    let config = LaunchConfig {
        grid_dim: (threads.div_ceil(u64::from(DEQUANT_THREADS)) as u32, 1, 1),
        block_dim: (DEQUANT_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let (rows, k) = (rows as i32, k as i32);
    let mut args = stream.launch_builder(function);
    args.arg(&q).arg(&scales).arg(&out).arg(&rows).arg(&k);
    // SAFETY: the signature is `mx_dequantize(const u8*, const u8*, bf16*, int, int)`; the buffers
    // have the sizes `rows`×`k` (bytes, bf16) and the blocked layout's.
    unsafe { args.launch(config) }
        .map(|_| ())
        .map_err(crate::error::Error::cuda("launching mx_dequantize"))
}
