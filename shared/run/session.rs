//! A session: one GPU, one shape, one seed. It compiles steps on demand, keeps every output it
//! computed (so step N is checked against step N−1 without running anything twice), and times.
//! This file is the bf16 session every step runs in; step 11's MXFP8 additions (its inputs, fp32
//! output, checks and baselines) are in [`mxfp8`].

use crate::check::problem::{Inputs, Shape};
use crate::check::verify::{self, Bounds, Check, Reference};
use crate::device::arch::Arch;
use crate::device::cublas::Cublas;
use crate::device::gpu::Gpu;
use crate::device::nvml::ClockSummary;
use crate::error::{Error, Result};
use crate::run::registry::{Baseline, Format, GemmOperands, KernelFile, LaunchFn, Step, Targets, Twin};
use crate::run::results::{
    AlternativeRecord, ChoiceRecord, MmaSyncCeiling, MxBaselines, StepRecord, Timing, TimingMethod,
};
use crate::run::timing::Contender;
use crate::run::workspace::Workspace;
use crate::{run::steps, run::timing};
use cudarc::driver::sys::CUfunction_attribute_enum as FuncAttr;
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr};
use half::bf16;
use half::slice::HalfFloatSliceExt;
use std::collections::HashMap;
use std::time::Instant;

pub mod mxfp8;
use mxfp8::MxState;

/// bf16 NaN: every output is filled with it before a run, so an unwritten element cannot pass.
const POISON: u16 = 0x7FC0;

/// A step's kernel, compiled and loaded for this GPU.
pub struct LoadedKernel {
    pub step: &'static Step,
    pub file: &'static KernelFile,
    pub arch: Arch,
    pub function: CudaFunction,
    pub compile_ms: f64,
    pub registers: Option<u32>,
    pub static_smem_bytes: Option<u32>,
    pub local_bytes: Option<u32>,
}

/// The compilation a loaded kernel's launches ran, and its resource figures: the kernel itself, or
/// the other compilation its launch took ([`crate::run::loader::ran`]).
pub struct Ran {
    pub function: CudaFunction,
    pub file: KernelFile,
    pub registers: Option<u32>,
    pub static_smem_bytes: Option<u32>,
    pub local_bytes: Option<u32>,
}

impl Ran {
    /// `function`'s figures, as the driver gives them; `file` is what it was compiled from.
    pub fn of(function: CudaFunction, file: KernelFile) -> Ran {
        let attribute = |a: FuncAttr| function.get_attribute(a).ok().map(|v| v as u32);
        Ran {
            registers: attribute(FuncAttr::CU_FUNC_ATTRIBUTE_NUM_REGS),
            static_smem_bytes: attribute(FuncAttr::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
            local_bytes: attribute(FuncAttr::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
            function,
            file,
        }
    }
}

impl LoadedKernel {
    /// What its launches ran, read after they ran: a record describes that compilation.
    pub fn ran(&self) -> Ran {
        let function = crate::run::loader::ran(&self.function);
        let file = crate::run::loader::file_of(&function).unwrap_or(*self.file);
        Ran::of(function, file)
    }
}

/// Options that shape a run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Verify only: no timing, nothing recorded.
    pub check_only: bool,
    /// Timed rounds of the alternating loop (`None`: about a second's worth).
    pub iters: Option<u32>,
}

/// What one step's alternating timing loop measured.
#[derive(Debug, Clone)]
pub struct StepTiming {
    pub step: Timing,
    pub cublas_bf16: Timing,
    /// For the CUDA-core steps only.
    pub cublas_sgemm: Option<Timing>,
    pub clocks: Option<ClockSummary>,
    pub warmup_ms: f64,
    /// For an MXFP8 step: the extra baselines timed in the same loop.
    pub mx: Option<MxBaselines>,
    /// The step's alternatives loaded for this GPU ([`Session::alternatives`]), in their order.
    pub alternatives: Vec<Timing>,
    /// For an sm80 twin: the GPU's `mma.sync` ceilings, timed in the same loop.
    pub mma_sync_ceiling: Option<MmaSyncCeiling>,
}

/// What one step's run produced.
pub struct StepOutcome {
    pub checks: Vec<Check>,
    /// Each alternative design's kernel path and checks, verified beside the step's own.
    pub alternatives: Vec<(&'static str, Vec<Check>)>,
    pub record: Option<StepRecord>,
}

/// Device copies of the inputs. Several identical copies, together bigger than L2, are rotated
/// through while timing so that each launch reads its operands from device memory.
struct DeviceInputs {
    a: Vec<CudaSlice<u16>>,
    b: Vec<CudaSlice<u16>>,
}

/// fp32 copies of the same inputs (and an fp32 C) for timing cuBLAS SGEMM, made when first needed.
struct Fp32Copies {
    a: Vec<CudaSlice<f32>>,
    b: Vec<CudaSlice<f32>>,
    c: CudaSlice<f32>,
}

pub struct Session {
    pub gpu: Gpu,
    pub shape: Shape,
    pub inputs: Inputs,
    /// The twin whose kernels this session's steps run (`--twin`; `None`: the GPU's own). Every step
    /// it loads, predecessors included, is of this twin, so a twin is verified against the same
    /// twin's previous step.
    twin: Option<Twin>,
    cublas: Cublas,
    device: DeviceInputs,
    fp32: Option<Fp32Copies>,
    c: CudaSlice<u16>,
    kernels: HashMap<u8, LoadedKernel>,
    /// Each step's alternative designs, compiled for this GPU, made with the step's kernel.
    alternatives: HashMap<u8, Vec<LoadedKernel>>,
    /// `false`: steps run without their alternatives ([`Session::without_alternatives`]).
    with_alternatives: bool,
    outputs: HashMap<u8, Vec<bf16>>,
    cublas_output: Option<Vec<bf16>>,
    cpu_reference: Option<Reference>,
    /// Step 11's inputs and outputs, made when an MXFP8 step first runs.
    mx: Option<MxState>,
    /// The one workspace of the session's launches (flags, scratch, epochs), sized for each step as
    /// it is loaded ([`Step::workspace`]).
    workspace: Workspace,
    /// The `mma.sync` ceiling kernels, loaded when an sm80 twin is first timed.
    ceiling: Option<crate::run::ceiling::Probes>,
}

fn ptr<T>(slice: &CudaSlice<T>, gpu: &Gpu) -> u64 {
    let (address, _sync) = slice.device_ptr(&gpu.stream);
    address
}

/// How many copies of the inputs to rotate through: together at least three times L2.
fn input_copies(gpu: &Gpu, bytes_per_copy: u64) -> usize {
    (3 * gpu.l2_bytes).div_ceil(bytes_per_copy.max(1)).clamp(2, 64) as usize
}

impl Session {
    pub fn new(gpu: Gpu, shape: Shape, seed: u64) -> Result<Session> {
        shape.check("the harness")?;
        Session::with_inputs(gpu, Inputs::generate(shape, seed))
    }

    /// A session on given inputs (the tests' way to reach corners the random inputs never do).
    pub fn with_inputs(gpu: Gpu, inputs: Inputs) -> Result<Session> {
        let shape = inputs.shape;
        shape.check("the harness")?;
        let bytes_per_copy = 2 * (shape.m * shape.k + shape.n * shape.k) as u64;
        let copies = input_copies(&gpu, bytes_per_copy);
        // bf16 copies, fp32 copies for SGEMM (twice the bytes), and the outputs.
        let needed = copies as u64 * bytes_per_copy * 3 + 6 * (shape.m * shape.n) as u64;
        let free = gpu.free_bytes()? as u64;
        if needed > free * 9 / 10 {
            return Err(Error::OutOfMemory(format!(
                "{shape} with {copies} input copies needs {:.1} GiB, the GPU has {:.1} GiB free",
                needed as f64 / (1u64 << 30) as f64,
                free as f64 / (1u64 << 30) as f64
            )));
        }
        let cublas = Cublas::new(gpu.stream.clone())?;
        let upload = |host: &[bf16]| -> Result<Vec<CudaSlice<u16>>> {
            let first = gpu
                .stream
                .clone_htod(host.reinterpret_cast())
                .map_err(Error::cuda("uploading inputs"))?;
            let mut all = vec![first];
            for _ in 1..copies {
                let copy = gpu.stream.clone_dtod(&all[0]).map_err(Error::cuda("copying inputs"))?;
                all.push(copy);
            }
            Ok(all)
        };
        let device = DeviceInputs {
            a: upload(&inputs.a)?,
            b: upload(&inputs.b)?,
        };
        // SAFETY: poisoned before every use.
        let c = unsafe { gpu.stream.alloc::<u16>(shape.m * shape.n) }.map_err(Error::cuda("allocating C"))?;
        Ok(Session {
            gpu,
            shape,
            inputs,
            twin: None,
            cublas,
            device,
            fp32: None,
            c,
            kernels: HashMap::new(),
            alternatives: HashMap::new(),
            with_alternatives: true,
            outputs: HashMap::new(),
            cublas_output: None,
            cpu_reference: None,
            mx: None,
            workspace: Workspace::new(),
            ceiling: None,
        })
    }

    /// The same session running `twin`'s kernels (`None`: the GPU's own). Kernels loaded and outputs
    /// computed so far are forgotten, since they may be another twin's.
    pub fn with_twin(mut self, twin: Option<Twin>) -> Session {
        if twin != self.twin {
            self.twin = twin;
            self.kernels.clear();
            self.alternatives.clear();
            self.outputs.clear();
            if let Some(mx) = self.mx.as_mut() {
                mx.forget_step_outputs();
            }
        }
        self
    }

    /// The twin this session runs (`None`: the GPU's own).
    pub fn twin(&self) -> Option<Twin> {
        self.twin
    }

    /// Steps loaded from here on run without their alternative designs: neither compiled, verified
    /// nor timed, and their records list none (`ladder` without `--alternatives`).
    pub fn without_alternatives(&mut self) {
        self.with_alternatives = false;
    }

    pub fn seed(&self) -> u64 {
        self.inputs.seed
    }

    /// The pointers and shape of input set `set` (the sets rotate; C is shared), and the workspace
    /// with a new epoch: one call per launch.
    pub fn operands(&self, set: usize) -> GemmOperands {
        let set = set % self.device.a.len();
        GemmOperands {
            a: ptr(&self.device.a[set], &self.gpu),
            b: ptr(&self.device.b[set], &self.gpu),
            c: ptr(&self.c, &self.gpu),
            scale_a: 0,
            scale_b: 0,
            workspace: self.workspace.next_launch(&self.gpu.stream),
            shape: self.shape,
        }
    }

    /// Makes room in the workspace for what `step`'s kernels need at this shape.
    fn ensure_workspace(&mut self, step: &Step) -> Result<()> {
        match step.workspace {
            Some(need) => self
                .workspace
                .ensure(&self.gpu.stream, need(self.shape, self.gpu.info.sms)),
            None => Ok(()),
        }
    }

    /// Makes room in the workspace for any step of `format`: a kernel run on its own
    /// ([`Session::run_function`]) may stand in for any of them.
    fn ensure_workspace_for(&mut self, format: Format) -> Result<()> {
        for step in steps::ALL.iter().filter(|s| s.format == format) {
            self.ensure_workspace(step)?;
        }
        Ok(())
    }

    /// Compiles and loads step `id` for this GPU (once), or says why it cannot run here. An MXFP8
    /// step's inputs are quantized and uploaded here too, so that [`Session::launch`] serves it.
    pub fn kernel(&mut self, id: u8) -> Result<&LoadedKernel> {
        if !self.kernels.contains_key(&id) {
            let step = steps::get(id)?;
            let loaded = load_kernel(&self.gpu, step, self.twin, self.shape)?;
            if self.with_alternatives {
                for line in step.alternatives_skipped(loaded.file, self.gpu.major, self.gpu.minor) {
                    eprintln!("{line}");
                }
            }
            let alternatives = step
                .alternatives_beside(loaded.file, self.gpu.major, self.gpu.minor)
                .filter(|_| self.with_alternatives)
                .map(|a| load_kernel_file(&self.gpu, step, &a.kernel, self.shape))
                .collect::<Result<Vec<_>>>()?;
            if step.format == Format::Mxfp8 {
                self.ensure_mx()?;
            }
            self.ensure_workspace(step)?;
            self.kernels.insert(id, loaded);
            self.alternatives.insert(id, alternatives);
        }
        Ok(&self.kernels[&id])
    }

    /// Step `id`'s alternative designs that serve this GPU, loaded with its kernel.
    pub fn alternatives(&mut self, id: u8) -> Result<&[LoadedKernel]> {
        self.kernel(id)?;
        Ok(&self.alternatives[&id])
    }

    fn poison_c(&self) -> Result<()> {
        let (address, _sync) = self.c.device_ptr(&self.gpu.stream);
        // SAFETY: fills exactly C's elements, on our stream.
        unsafe { cudarc::driver::sys::cuMemsetD16Async(address, POISON, self.c.len(), self.gpu.stream.cu_stream()) }
            .result()
            .map_err(Error::cuda("poisoning C"))
    }

    fn read_c(&self, what: &str) -> Result<Vec<bf16>> {
        self.gpu.finish(what)?;
        let bits = self
            .gpu
            .stream
            .clone_dtoh(&self.c)
            .map_err(Error::cuda(format!("reading back {what}")))?;
        Ok(bits.into_iter().map(bf16::from_bits).collect())
    }

    /// Step `id`'s output on the first input set, computed once.
    pub fn output_of(&mut self, id: u8) -> Result<&[bf16]> {
        if steps::get(id)?.format == Format::Mxfp8 {
            return Err(Error::Other(format!(
                "step {id:02} writes fp32: its output is Session::mx_output_of's"
            )));
        }
        if !self.outputs.contains_key(&id) {
            self.kernel(id)?;
            self.poison_c()?;
            let ops = self.operands(0);
            let kernel = &self.kernels[&id];
            let what = kernel.step.binary();
            (kernel.file.launch)(&kernel.function, &self.gpu.stream, &ops)?;
            let out = self.read_c(&what)?;
            self.outputs.insert(id, out);
        }
        Ok(&self.outputs[&id])
    }

    /// Runs any loaded kernel with `launch` on the first input set and returns its output
    /// (used by the tests to feed the checker deliberately wrong kernels).
    pub fn run_function(&mut self, function: &CudaFunction, launch: LaunchFn, what: &str) -> Result<Vec<bf16>> {
        self.ensure_workspace_for(Format::Bf16)?;
        self.poison_c()?;
        let ops = self.operands(0);
        launch(function, &self.gpu.stream, &ops)?;
        self.read_c(what)
    }

    /// cuBLAS bf16's output on the first input set, computed once.
    pub fn cublas_output(&mut self) -> Result<&[bf16]> {
        if self.cublas_output.is_none() {
            self.poison_c()?;
            let ops = self.operands(0);
            self.cublas.gemm_bf16(ops.a, ops.b, ops.c, self.shape)?;
            self.cublas_output = Some(self.read_c("cuBLAS bf16")?);
        }
        Ok(self.cublas_output.as_deref().expect("just computed"))
    }

    /// The CPU f64 reference (full for small shapes, sampled for large), computed once.
    pub fn cpu_reference(&mut self) -> &Reference {
        let (inputs, shape) = (&self.inputs, self.shape);
        self.cpu_reference
            .get_or_insert_with(|| verify::cpu_reference(&inputs.a, &inputs.b, shape))
    }

    /// Every check step `id` must pass: its predecessor (or the CPU for step01) and cuBLAS bf16.
    pub fn verify(&mut self, id: u8) -> Result<Vec<Check>> {
        let step = steps::get(id)?;
        if step.format == Format::Mxfp8 {
            return self.verify_mx(step);
        }
        let shape = self.shape;
        let mut checks = Vec::new();
        self.output_of(id)?;
        match step.predecessor {
            Some(previous) => {
                let reference = Reference::Bf16(self.output_of(previous)?.to_vec());
                let got = &self.outputs[&id];
                checks.push(verify::compare(
                    &format!("step{previous:02}"),
                    got,
                    &reference,
                    shape,
                    &Bounds::gpu_vs_gpu(),
                ));
            }
            None => {
                self.cpu_reference();
                let got = &self.outputs[&id];
                let reference = self.cpu_reference.as_ref().expect("just computed");
                checks.push(verify::compare(
                    "CPU f64",
                    got,
                    reference,
                    shape,
                    &Bounds::gpu_vs_exact(),
                ));
            }
        }
        let reference = Reference::Bf16(self.cublas_output()?.to_vec());
        let got = &self.outputs[&id];
        checks.push(verify::compare(
            "cuBLAS bf16",
            got,
            &reference,
            shape,
            &Bounds::gpu_vs_gpu(),
        ));
        Ok(checks)
    }

    /// Enqueues step `id` (already loaded with [`Session::kernel`]) on input set `set`.
    pub fn launch(&self, id: u8, set: usize) -> Result<()> {
        let kernel = self
            .kernels
            .get(&id)
            .ok_or_else(|| Error::Other(format!("step {id:02} is not loaded")))?;
        self.launch_loaded(kernel, set)
    }

    /// Enqueues a loaded kernel of a step (its own or an alternative) on input set `set` of the step's
    /// format.
    fn launch_loaded(&self, kernel: &LoadedKernel, set: usize) -> Result<()> {
        let ops = self.operands_in(kernel.step.format, set)?;
        (kernel.file.launch)(&kernel.function, &self.gpu.stream, &ops)
    }

    /// The operands of input set `set` in `format`: [`Session::operands`] or [`Session::mx_operands`].
    pub fn operands_in(&self, format: Format, set: usize) -> Result<GemmOperands> {
        match format {
            Format::Bf16 => Ok(self.operands(set)),
            Format::Mxfp8 => self.mx_operands(set),
        }
    }

    /// The checks of a kernel that stands in for step `id`'s (an alternative design, a student's
    /// exercise): `function` launched with `launch` on the step's inputs, compared with the step's own
    /// kernel and cuBLAS bf16 (for MXFP8 also cuBLAS fp32-out and the exact MX product), with the
    /// harness's bounds.
    pub fn verify_beside(
        &mut self,
        id: u8,
        function: &CudaFunction,
        launch: LaunchFn,
        what: &str,
    ) -> Result<Vec<Check>> {
        let step = steps::get(id)?;
        let shape = self.shape;
        match step.format {
            Format::Bf16 => {
                let got = self.run_function(function, launch, what)?;
                let own = Reference::Bf16(self.output_of(id)?.to_vec());
                let cublas = Reference::Bf16(self.cublas_output()?.to_vec());
                Ok(vec![
                    verify::compare(&step.binary(), &got, &own, shape, &Bounds::gpu_vs_gpu()),
                    verify::compare("cuBLAS bf16", &got, &cublas, shape, &Bounds::gpu_vs_gpu()),
                ])
            }
            Format::Mxfp8 => {
                let got = self.run_mx_function(function, launch, what)?;
                self.check_mx_output(Some(id), &got)
            }
        }
    }

    /// The names (kernel paths) of step `id`'s loaded alternatives and a launch on input set `i` for
    /// each: contenders for the step's timing loop.
    fn alternative_launches(&self, id: u8) -> (Vec<&'static str>, Vec<impl FnMut(usize) -> Result<()> + '_>) {
        let loaded = self.alternatives.get(&id).map(Vec::as_slice).unwrap_or_default();
        let names = loaded.iter().map(|k| k.file.path).collect();
        let launches = loaded
            .iter()
            .map(|k| move |i: usize| self.launch_loaded(k, i))
            .collect();
        (names, launches)
    }

    /// [`Session::verify_beside`] for each of step `id`'s alternatives: their kernel paths and checks.
    fn verify_alternatives(&mut self, id: u8) -> Result<Vec<(&'static str, Vec<Check>)>> {
        let loaded: Vec<(&'static KernelFile, CudaFunction)> = self
            .alternatives(id)?
            .iter()
            .map(|k| (k.file, k.function.clone()))
            .collect();
        loaded
            .into_iter()
            .map(|(file, function)| Ok((file.path, self.verify_beside(id, &function, file.launch, file.path)?)))
            .collect()
    }

    /// Enqueues cuBLAS bf16 on input set `set`.
    pub fn launch_cublas_bf16(&self, set: usize) -> Result<()> {
        let ops = self.operands(set);
        self.cublas.gemm_bf16(ops.a, ops.b, ops.c, self.shape)
    }

    /// Enqueues, on input set `set`, the cuBLAS a step of `format` is judged against
    /// ([`Baseline::of_format`]): cuBLAS bf16 C, or for MXFP8 cuBLAS fp32 C on the dequantized inputs.
    pub fn launch_baseline(&self, format: Format, set: usize) -> Result<()> {
        match Baseline::of_format(format) {
            Baseline::CublasBf16C => self.launch_cublas_bf16(set),
            Baseline::CublasF32C => self.launch_cublas_f32_c_dequantized(set),
        }
    }

    /// Makes the fp32 copies of the inputs (and an fp32 C) that SGEMM is timed on, once.
    fn ensure_fp32(&mut self) -> Result<()> {
        if self.fp32.is_some() {
            return Ok(());
        }
        let copies = self.device.a.len();
        let upload = |host: &[bf16]| -> Result<Vec<CudaSlice<f32>>> {
            let wide: Vec<f32> = host.iter().map(|v| v.to_f32()).collect();
            (0..copies)
                .map(|_| {
                    self.gpu
                        .stream
                        .clone_htod(&wide)
                        .map_err(Error::cuda("uploading fp32 inputs"))
                })
                .collect()
        };
        let (a, b) = (upload(&self.inputs.a)?, upload(&self.inputs.b)?);
        // SAFETY: SGEMM writes every element before anyone reads it; nothing verifies this buffer.
        let c = unsafe { self.gpu.stream.alloc::<f32>(self.shape.m * self.shape.n) }
            .map_err(Error::cuda("allocating fp32 C"))?;
        self.fp32 = Some(Fp32Copies { a, b, c });
        Ok(())
    }

    /// Times step `id` (loaded) against cuBLAS bf16, and for a CUDA-core step also against cuBLAS
    /// SGEMM on fp32 copies of the same values, all in one alternating loop ([`timing::measure`]).
    pub fn time_step(&mut self, id: u8, iters: Option<u32>) -> Result<StepTiming> {
        if self.kernel(id)?.step.format == Format::Mxfp8 {
            return self.time_mx_step(id, iters);
        }
        self.prepare_ceiling(id)?;
        let kernel = self.kernel(id)?;
        let what = kernel.step.binary();
        let with_sgemm = kernel.file.targets == Targets::AnyGpu;
        if with_sgemm {
            self.ensure_fp32()?;
        }
        let this = &*self;
        let mut step = |i: usize| this.launch(id, i);
        let mut bf16 = |i: usize| this.launch_cublas_bf16(i);
        let mut sgemm = |i: usize| {
            let Fp32Copies { a, b, c } = this.fp32.as_ref().expect("made above");
            let i = i % a.len();
            this.cublas.sgemm(
                ptr(&a[i], &this.gpu),
                ptr(&b[i], &this.gpu),
                ptr(c, &this.gpu),
                this.shape,
            )
        };
        let (alternatives, mut alternative_launches) = this.alternative_launches(id);
        let probes = this.ceiling.as_ref();
        let (mut on_ldmatrix, mut on_registers) = this.ceiling_launches();
        let mut contenders = vec![
            Contender {
                name: &what,
                launch: &mut step,
            },
            Contender {
                name: "cuBLAS bf16",
                launch: &mut bf16,
            },
        ];
        if with_sgemm {
            contenders.push(Contender {
                name: "cuBLAS SGEMM",
                launch: &mut sgemm,
            });
        }
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
        let measured = timing::measure(&this.gpu, this.shape, iters, &mut contenders)?;
        let mut timings = measured.timings;
        let alternative_timings = timings.split_off(timings.len() - alternatives.len());
        let ceiling_timings = timings.split_off(timings.len() - if probes.is_some() { 2 } else { 0 });
        let mut timings = timings.into_iter();
        let (Some(step), Some(cublas_bf16)) = (timings.next(), timings.next()) else {
            return Err(Error::Other(format!("{what}: the timing loop lost a contender")));
        };
        let mma_sync_ceiling = probes
            .zip(ceiling_timings.get(..2))
            .map(|(probes, ceiling)| probes.record(&ceiling[0], &ceiling[1], &cublas_bf16, measured.clocks.clone()));
        Ok(StepTiming {
            step,
            cublas_bf16,
            cublas_sgemm: timings.next(),
            clocks: measured.clocks,
            warmup_ms: measured.warmup_ms,
            mx: None,
            alternatives: alternative_timings,
            mma_sync_ceiling,
        })
    }

    /// Loads the `mma.sync` ceiling kernels if step `id`'s kernel (loaded) is an sm80 twin, whose loop
    /// times them as two more contenders ([`Session::ceiling_launches`]).
    fn prepare_ceiling(&mut self, id: u8) -> Result<()> {
        if self.kernel(id)?.file.targets == Targets::Ampere && self.ceiling.is_none() {
            self.ceiling = Some(crate::run::ceiling::Probes::load(&self.gpu, self.seed())?);
        }
        Ok(())
    }

    /// One launch of the ldmatrix-fed and of the registers-only ceiling (used only when
    /// [`Session::prepare_ceiling`] loaded them).
    fn ceiling_launches(
        &self,
    ) -> (
        impl FnMut(usize) -> Result<()> + '_,
        impl FnMut(usize) -> Result<()> + '_,
    ) {
        let stream = &self.gpu.stream;
        let loaded = || {
            self.ceiling
                .as_ref()
                .ok_or_else(|| Error::Other("the mma.sync ceiling is not loaded".into()))
        };
        (
            move |_: usize| loaded()?.launch_ldmatrix(stream),
            move |_: usize| loaded()?.launch_registers(stream),
        )
    }

    /// The whole contract for one step: compile, verify, and unless `check_only`, time and describe.
    pub fn run_step(&mut self, id: u8, options: &RunOptions) -> Result<StepOutcome> {
        let checks = self.verify(id)?;
        let binary = steps::get(id)?.binary();
        if let Some(failed) = checks.iter().find(|c| !c.passed) {
            crate::run::report::print_checks(&binary, self.shape, &checks);
            return Err(Error::Verification(verify::failure_line(&binary, failed)));
        }
        let alternatives = self.verify_alternatives(id)?;
        for (path, alternative_checks) in &alternatives {
            if let Some(failed) = alternative_checks.iter().find(|c| !c.passed) {
                crate::run::report::print_checks(path, self.shape, alternative_checks);
                return Err(Error::Verification(verify::failure_line(path, failed)));
            }
        }
        if options.check_only {
            return Ok(StepOutcome {
                checks,
                alternatives,
                record: None,
            });
        }
        let StepTiming {
            step: time,
            cublas_bf16,
            cublas_sgemm,
            clocks,
            warmup_ms,
            mx,
            alternatives: alternative_timings,
            mma_sync_ceiling,
        } = self.time_step(id, options.iters)?;
        // Loaded in the order of the step's list (`Session::kernel`): alternatives may share a file
        // and even their defines (step 10's), so they are named by place, not found by content.
        let own = &self.kernels[&id];
        let designs = own.step.alternatives_beside(own.file, self.gpu.major, self.gpu.minor);
        let alternative_records: Vec<AlternativeRecord> = self.alternatives[&id]
            .iter()
            .zip(designs)
            .zip(alternative_timings)
            .zip(&alternatives)
            .map(|(((loaded, design), timing), (_, checks))| {
                let ran = loaded.ran();
                AlternativeRecord {
                    name: design.name.to_string(),
                    design: design.design.to_string(),
                    kernel: loaded.file.path.to_string(),
                    source_hash: Some(crate::run::provenance::source_hash(loaded.file)),
                    ratio_bf16: timing.tflops / cublas_bf16.tflops,
                    ratio_step: timing.tflops / time.tflops,
                    time: timing,
                    checks: checks.clone(),
                    registers: ran.registers,
                    dynamic_smem_bytes: ran.file.max_dynamic_smem,
                    local_bytes: ran.local_bytes,
                }
            })
            .collect();
        let designs = own.step.alternatives_beside(own.file, self.gpu.major, self.gpu.minor);
        let plans = designs
            .zip(&alternative_records)
            .filter(|(design, _)| design.plan)
            .map(|(_, r): (_, &AlternativeRecord)| (r.name.as_str(), r.time.median_ms));
        let choice = ChoiceRecord::of(time.median_ms, plans);
        let kernel = &self.kernels[&id];
        // What the record says of the kernel is of the compilation its launches ran (an sm80 twin's
        // deeper ring where this GPU holds it), not of the registered one.
        let ran = kernel.ran();
        // What the step's launch chose at this shape (step 10: the tile), and the grid of the
        // kernel that ran, which the driver's answer for the step's own compilation may not be.
        let plan = crate::run::registry::plan_for(kernel.file, self.shape);
        let mut computed =
            crate::run::profile::computed(&self.gpu, &ran.file, &ran.function, self.shape, kernel.step.format);
        if let Some(fit) = plan.as_ref().and_then(|p| p.clusters_fit) {
            computed.clusters_fit = Some(fit);
        }
        let record = StepRecord {
            step: id,
            name: kernel.step.name.to_string(),
            title: kernel.step.title.to_string(),
            arch: kernel.arch.sm(),
            kernel: kernel.file.path.to_string(),
            source_hash: Some(crate::run::provenance::source_hash(kernel.file)),
            shape: self.shape,
            sweep: false,
            random_sweep: None,
            seed: self.seed(),
            date: crate::run::results::utc_now_rfc3339(),
            git: crate::revision(),
            ratio_bf16: time.tflops / cublas_bf16.tflops,
            ratio_sgemm: cublas_sgemm.as_ref().map(|s| time.tflops / s.tflops),
            // An MXFP8 step that timed cuBLAS with fp32 C is judged against it: like for like.
            baseline: match mx.as_ref().and_then(|m| m.cublas_f32_c.as_ref()) {
                Some(_) => Baseline::CublasF32C,
                None => Baseline::CublasBf16C,
            },
            time,
            cublas_bf16,
            cublas_sgemm,
            timing_method: TimingMethod::Alternating,
            warmup_ms: Some(warmup_ms),
            clocks,
            checks: checks.clone(),
            registers: ran.registers,
            static_smem_bytes: ran.static_smem_bytes,
            dynamic_smem_bytes: ran.file.max_dynamic_smem,
            local_bytes: ran.local_bytes,
            profile: Some(crate::run::profile::Profile {
                source: crate::run::profile::ProfileSource::Computed,
                note: None,
                computed,
                ncu: None,
                cublas_ncu: None,
                cublas_baseline: Baseline::CublasBf16C,
            }),
            mx,
            plan: plan.map(|p| p.text),
            alternatives: alternative_records,
            choice,
            // An sm80 twin is read against the GPU's mma.sync ceiling, timed in its own loop.
            mma_sync_ceiling,
        };
        Ok(StepOutcome {
            checks,
            alternatives,
            record: Some(record),
        })
    }
}

/// Compiles the step's kernel file of `twin` (`None`: the GPU's own) that serves this GPU, loads it,
/// and reads its resource figures.
pub fn load_kernel(gpu: &Gpu, step: &'static Step, twin: Option<Twin>, shape: Shape) -> Result<LoadedKernel> {
    let file = step
        .kernel_of_twin(gpu.major, gpu.minor, twin)
        .ok_or_else(|| Error::Unsupported {
            step: step.binary(),
            needs: step.needs(twin),
            found: format!("{} (compute capability {}.{})", gpu.info.name, gpu.major, gpu.minor),
        })?;
    load_kernel_file(gpu, step, file, shape)
}

/// Compiles `file` (step's own kernel or one of its alternatives), loads it, and reads its resource
/// figures.
pub fn load_kernel_file(
    gpu: &Gpu,
    step: &'static Step,
    file: &'static KernelFile,
    shape: Shape,
) -> Result<LoadedKernel> {
    step.format.check(shape, &step.binary())?;
    let started = Instant::now();
    let (function, arch) = load_file(gpu, file)?;
    let compile_ms = started.elapsed().as_secs_f64() * 1e3;
    let attribute = |a: FuncAttr| function.get_attribute(a).ok().map(|v| v as u32);
    Ok(LoadedKernel {
        step,
        file,
        arch,
        registers: attribute(FuncAttr::CU_FUNC_ATTRIBUTE_NUM_REGS),
        static_smem_bytes: attribute(FuncAttr::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
        local_bytes: attribute(FuncAttr::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
        function,
        compile_ms,
    })
}

/// Compiles one kernel file for this GPU with NVRTC and loads its entry function.
pub fn load_file(gpu: &Gpu, file: &KernelFile) -> Result<(CudaFunction, Arch)> {
    crate::run::loader::load_in(&gpu.ctx, gpu.major, gpu.minor, file)
}

impl Session {
    /// Ends the session and hands the GPU back for the next shape.
    pub fn into_gpu(self) -> Gpu {
        self.gpu
    }
}
