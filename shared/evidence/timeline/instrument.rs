//! On the GPU: the instrumented build of a step's kernel (`TIMELINE=1`), its stamp buffer, and
//! `stepNN --timeline`, which checks it against the plain build, times the two, and records the timeline.

use super::*;
use crate::check::problem::Shape;
use crate::device::gpu::Gpu;
use crate::error::{Error, Result};
use crate::run::registry::{Format, KernelFile, Step, Targets};
use crate::run::results::{self, significant};
use crate::run::session::Session;
use crate::run::timing::{self, Contender};
use crate::svg::write_if_changed;
use cudarc::driver::sys::CUfunction_attribute_enum as FuncAttr;
use cudarc::driver::{CudaFunction, CudaModule, DevicePtr};
use std::sync::Arc;

/// Warpgroups of a block (the producer, two consumers): what a Hopper warp-specialised step launches.
const WARPGROUP_THREADS: u32 = 128;

/// The steps that can be built with stamps.
pub fn supports(step: &Step) -> bool {
    step.kernels
        .iter()
        .any(|k| k.targets == Targets::Hopper && k.source.contains("TIMELINE_STAMP("))
}

/// The kernel file with `TIMELINE=1` added to its defines.
pub fn instrumented(file: &KernelFile) -> KernelFile {
    let mut defines = file.defines.to_vec();
    defines.push(("TIMELINE", 1));
    KernelFile {
        path: file.path,
        source: file.source,
        targets: file.targets,
        entry: file.entry,
        defines: Box::leak(defines.into_boxed_slice()),
        max_dynamic_smem: file.max_dynamic_smem,
        launch: file.launch,
    }
}

/// Blocks the launch may have at most (a tile per block, the grid rounded to whole clusters along M;
/// a persistent grid has fewer), and records per warpgroup that hold every stamp with room to spare.
pub fn buffer_plan(file: &KernelFile, shape: Shape, sms: u32) -> (u64, u64) {
    let bm = file.define("BM").unwrap_or(128);
    let bn = file.define("BN").unwrap_or(256);
    let bk = file.define("BK").unwrap_or(64);
    let cluster = file.define("CLUSTER_M").unwrap_or(1).max(1);
    let tiles_m = (shape.m as u64).div_ceil(bm).div_ceil(cluster) * cluster;
    let blocks = tiles_m * (shape.n as u64).div_ceil(bn);
    let k_tiles = (shape.k as u64).div_ceil(bk);
    // A consumer stamps three times a K tile (five where it converts the next one: step 11) and a few
    // times a tile; a persistent block has several tiles (at most blocks / (sms / 2) of them with one
    // block per SM and half the SMs in use).
    let per_k_tile = if file.source.contains("TIMELINE_STAMP(TL_CONVERT_START)") {
        5
    } else {
        3
    };
    let tiles_per_block = blocks.div_ceil((sms as u64 / 2).max(1)).max(1);
    let capacity = (per_k_tile * k_tiles + 16) * tiles_per_block * 2;
    (blocks, capacity)
}

struct Instrumented {
    module: Arc<CudaModule>,
    function: CudaFunction,
    file: KernelFile,
}

fn load_instrumented(gpu: &Gpu, file: &KernelFile) -> Result<Instrumented> {
    let file = instrumented(file);
    let (module, function, _) = crate::run::loader::load_module_in(&gpu.ctx, gpu.major, gpu.minor, &file)?;
    Ok(Instrumented { module, function, file })
}

fn set_global(module: &Arc<CudaModule>, gpu: &Gpu, name: &str, bytes: &[u8]) -> Result<()> {
    let mut view = module
        .get_global(name, &gpu.stream)
        .map_err(Error::cuda(format!("finding the kernel's {name}")))?;
    gpu.stream
        .memcpy_htod(bytes, &mut view)
        .map_err(Error::cuda(format!("setting {name}")))
}

fn read_global_u32(module: &Arc<CudaModule>, gpu: &Gpu, name: &str) -> Result<u32> {
    let view = module
        .get_global(name, &gpu.stream)
        .map_err(Error::cuda(format!("finding the kernel's {name}")))?;
    let mut out = [0u8; 4];
    gpu.stream
        .memcpy_dtoh(&view.slice(0..4), &mut out)
        .map_err(Error::cuda(format!("reading {name}")))?;
    Ok(u32::from_le_bytes(out))
}

/// `stepNN --timeline`: the instrumented build checked, timed against the plain one, run once more
/// and drawn; the figure and the trace written under `book_dir` (when there is one).
pub fn timeline_main(
    step: &'static Step,
    twin: Option<crate::run::registry::Twin>,
    gpu: Gpu,
    shape: Shape,
    seed: u64,
    iters: Option<u32>,
    book_dir: Option<&Path>,
) -> Result<()> {
    let file = step
        .kernel_of_twin(gpu.major, gpu.minor, twin)
        .filter(|k| k.source.contains("TIMELINE_STAMP("))
        .ok_or_else(|| {
            Error::Usage(format!(
                "{} --timeline: this step's kernel for this GPU has no timeline stamps (steps 08, 09, 10 and 11 have them on Hopper)",
                step.binary()
            ))
        })?;
    let gpu_name = gpu.info.name.clone();
    let sms = gpu.info.sms;
    let mut session = Session::new(gpu, shape, seed)?.with_twin(twin);
    let id = step.id;
    session.kernel(id)?;
    let inst = load_instrumented(&session.gpu, file)?;

    // The buffer and the globals that point at it.
    let (blocks, capacity) = buffer_plan(file, shape, sms);
    let threads = inst
        .function
        .get_attribute(FuncAttr::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        .map_err(Error::cuda("reading the block size"))? as u32;
    let warpgroups = threads.div_ceil(WARPGROUP_THREADS) as u64;
    let bytes = (blocks * warpgroups * capacity) as usize * RECORD_BYTES;
    let gpu = &session.gpu;
    let mut buffer = gpu
        .stream
        .alloc_zeros::<u8>(bytes)
        .map_err(Error::cuda(format!("allocating {} MiB for the stamps", bytes >> 20)))?;
    let (address, _sync) = buffer.device_ptr(&gpu.stream);
    set_global(&inst.module, gpu, "timeline_records", &address.to_le_bytes())?;
    drop(_sync);
    set_global(&inst.module, gpu, "timeline_capacity", &(capacity as u32).to_le_bytes())?;
    set_global(&inst.module, gpu, "timeline_blocks", &(blocks as u32).to_le_bytes())?;
    set_global(&inst.module, gpu, "timeline_dropped", &0u32.to_le_bytes())?;

    // Stamps must not change what the kernel computes: bit for bit, in the step's format.
    let what = format!("{} with stamps", step.binary());
    let same = match step.format {
        Format::Bf16 => {
            let plain = session.output_of(id)?.to_vec();
            let stamped = session.run_function(&inst.function, inst.file.launch, &what)?;
            plain
                .iter()
                .map(|v| v.to_bits())
                .eq(stamped.iter().map(|v| v.to_bits()))
        }
        Format::Mxfp8 => {
            let plain = session.mx_output_of(id)?.to_vec();
            let stamped = session.run_mx_function(&inst.function, inst.file.launch, &what)?;
            plain
                .iter()
                .map(|v| v.to_bits())
                .eq(stamped.iter().map(|v| v.to_bits()))
        }
    };
    if !same {
        return Err(Error::Verification(format!(
            "{} built with TIMELINE=1 computes a different C than the plain build",
            step.binary()
        )));
    }

    // The overhead: both builds in one alternating loop.
    let this = &session;
    let mut run_plain = |i: usize| this.launch(id, i);
    let mut run_stamped =
        |i: usize| (inst.file.launch)(&inst.function, &this.gpu.stream, &this.operands_in(step.format, i)?);
    let plain_name = format!("{} plain", step.binary());
    let stamped_name = format!("{} TIMELINE=1", step.binary());
    let mut contenders = vec![
        Contender {
            name: &plain_name,
            launch: &mut run_plain,
        },
        Contender {
            name: &stamped_name,
            launch: &mut run_stamped,
        },
    ];
    let measured = timing::measure(&this.gpu, shape, iters.or(Some(30)), &mut contenders)?;
    let (plain_t, stamped_t) = (&measured.timings[0], &measured.timings[1]);

    // One more instrumented run, on a zeroed buffer, for the record.
    let gpu = &session.gpu;
    gpu.stream
        .memset_zeros(&mut buffer)
        .map_err(Error::cuda("clearing the stamps"))?;
    set_global(&inst.module, gpu, "timeline_dropped", &0u32.to_le_bytes())?;
    (inst.file.launch)(&inst.function, &gpu.stream, &session.operands_in(step.format, 0)?)?;
    gpu.finish(&format!("{} with stamps", step.binary()))?;
    let host = gpu
        .stream
        .clone_dtoh(&buffer)
        .map_err(Error::cuda("reading the stamps back"))?;
    let dropped = read_global_u32(&inst.module, gpu, "timeline_dropped")?;
    let stamps = parse_stamps(&host);
    if stamps.is_empty() {
        return Err(Error::Other(format!(
            "{} --timeline: the kernel wrote no stamps",
            step.binary()
        )));
    }
    let origin = stamps.iter().map(|s| s.time_ns).min().unwrap_or(0);
    let end = stamps.iter().map(|s| s.time_ns).max().unwrap_or(origin);
    let all_spans = spans(&stamps);
    let sms_shown = shown_sms(&stamps, SMS_SHOWN);
    let summary = Summary {
        step: id,
        gpu: gpu_name.clone(),
        shape,
        seed,
        date: results::utc_now_rfc3339(),
        git: crate::GIT_REVISION.to_string(),
        plain_ms: plain_t.median_ms,
        instrumented_ms: stamped_t.median_ms,
        overhead: stamped_t.median_ms / plain_t.median_ms - 1.0,
        runs: plain_t.runs,
        stamps: stamps.len() as u64,
        dropped: dropped as u64,
        consumer_mma_share: consumer_share(&all_spans, &sms_shown, SpanKind::Mma),
        consumer_epilogue_share: consumer_share(&all_spans, &sms_shown, SpanKind::Epilogue),
        consumer_convert_share: consumer_share(&all_spans, &sms_shown, SpanKind::Convert),
        consumer_mma_wait_share: consumer_share(&all_spans, &sms_shown, SpanKind::MmaWait),
        consumer_barrier_share: consumer_share(&all_spans, &sms_shown, SpanKind::Barrier),
        consumer_stage_wait_share: consumer_share(&all_spans, &sms_shown, SpanKind::StageWait),
        sms_shown,
        span_us: (end - origin) as f64 / 1e3,
    };
    println!(
        "{} --timeline at {shape}: plain {} ms, with stamps {} ms ({:+.1}% overhead, {} rounds); {} stamps, {} dropped; \
         shown consumers spend {}",
        step.binary(),
        significant(summary.plain_ms, 4),
        significant(summary.instrumented_ms, 4),
        100.0 * summary.overhead,
        summary.runs,
        summary.stamps,
        summary.dropped,
        summary.consumer_time(),
    );
    let Some(book_dir) = book_dir else {
        println!("note: --no-record, or no book/ folder here: the timeline figure and trace are not written");
        return Ok(());
    };
    let slug = results::slug(&gpu_name);
    let svg = svg_path(book_dir, id, &slug);
    write_if_changed(&svg, &gantt_svg(&all_spans, &summary, origin, end)?)?;
    let trace = trace_path(book_dir, id, &slug);
    let mut text = serde_json::to_string(&trace_json(&all_spans, &summary, origin))
        .map_err(|e| Error::Other(format!("writing the trace: {e}")))?;
    text.push('\n');
    results::write_file_atomically(&trace, &text)?;
    println!(
        "wrote {} and {} (open it at ui.perfetto.dev)",
        svg.display(),
        trace.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hopper_warp_specialised_steps_have_stamps_and_the_others_do_not() {
        let with: Vec<u8> = crate::run::steps::ALL
            .iter()
            .filter(|s| supports(s))
            .map(|s| s.id)
            .collect();
        assert_eq!(with, [8, 9, 10, 11]);
        let file = &crate::run::steps::get(8).unwrap().kernels[0];
        let inst = instrumented(file);
        assert_eq!(inst.defines.last(), Some(&("TIMELINE", 1)));
        assert_eq!(inst.defines.len(), file.defines.len() + 1);
        let (blocks, capacity) = buffer_plan(file, Shape::square(4096), 132);
        assert_eq!(blocks, 32 * 16);
        assert!(capacity >= 3 * 64 + 8, "{capacity}");
        // Step 11's consumers stamp five times a K tile; a persistent block of its has up to 8 tiles
        // at 4096 on 132 SMs.
        let file = &crate::run::steps::get(11).unwrap().kernels[0];
        assert_eq!(file.targets, Targets::Hopper);
        let (blocks, capacity) = buffer_plan(file, Shape::square(4096), 132);
        assert_eq!(blocks, 32 * 16);
        assert!(capacity >= (5 * 64 + 16) * 8, "{capacity}");
    }
}
