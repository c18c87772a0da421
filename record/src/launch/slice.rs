//! Stage "launch": `--jobs N` — gives each concurrently running job its own slice of GPUs
//! as a `CUDA_VISIBLE_DEVICES` value.

use super::error::LaunchError;

/// The GPUs goldgate may hand out: the entries of goldgate's own `CUDA_VISIBLE_DEVICES` when
/// it is set (indices or UUIDs, kept as written), else `0..count`.
pub fn visible_gpus(count: u32, cuda_visible_devices: Option<&str>) -> Vec<String> {
    match cuda_visible_devices {
        Some(list) => list
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(str::to_owned)
            .collect(),
        None => (0..count).map(|i| i.to_string()).collect(),
    }
}

/// `jobs` disjoint slices of `nproc` GPUs each, in order: slice `i` is what job slot `i`
/// puts in `CUDA_VISIBLE_DEVICES`. Errors when `jobs * nproc` exceeds the GPUs given.
pub fn gpu_slices(gpus: &[String], nproc: u32, jobs: u32) -> Result<Vec<String>, LaunchError> {
    let need = u64::from(nproc) * u64::from(jobs);
    if need > gpus.len() as u64 || nproc == 0 {
        return Err(LaunchError::TooFewGpus {
            jobs,
            nproc,
            need,
            total: gpus.len(),
        });
    }
    Ok(gpus
        .chunks(nproc as usize)
        .take(jobs as usize)
        .map(|c| c.join(","))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_disjoint_and_in_order() {
        let gpus = visible_gpus(8, None);
        assert_eq!(
            gpu_slices(&gpus, 2, 4).unwrap(),
            ["0,1", "2,3", "4,5", "6,7"]
        );
        assert_eq!(gpu_slices(&gpus, 4, 1).unwrap(), ["0,1,2,3"]);
        assert_eq!(gpu_slices(&gpus, 3, 2).unwrap(), ["0,1,2", "3,4,5"]);
    }

    #[test]
    fn respects_goldgate_own_visible_devices() {
        let gpus = visible_gpus(8, Some("4, 5,GPU-abc,7"));
        assert_eq!(gpu_slices(&gpus, 2, 2).unwrap(), ["4,5", "GPU-abc,7"]);
    }

    #[test]
    fn too_many_jobs_is_an_error_that_says_why() {
        let err = gpu_slices(&visible_gpus(4, None), 2, 3).unwrap_err();
        assert_eq!(
            err.to_string(),
            "3 concurrent jobs of 2 GPUs each need 6 GPUs, but 4 are visible"
        );
        assert!(matches!(err, LaunchError::TooFewGpus { .. }));
        assert!(gpu_slices(&visible_gpus(4, None), 0, 1).is_err());
    }
}
