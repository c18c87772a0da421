//! Stage "compare": does a recorded environment match the golden file's platform?
//!
//! A golden file names its platform only in its file name (`golden_values_dev_dgx_h100.json`);
//! Megatron's format has no room for a fingerprint. So goldgate keeps a small table from
//! platform-name fragments to GPU model fragments and checks the record's NVML GPU model
//! against it. Platform names the table does not know (`dev_cpu`) expect no GPU. The driver
//! version is recorded in results but not checked: a golden file has nowhere to keep it.

use goldgate_schema::Fingerprint;

/// Platform-name fragment (lower case) → fragment of the NVML GPU model name.
/// Legacy Megatron cluster names (`dgxa100_dracooci`, `dgxh100_dgxc`) match by fragment too.
const PLATFORM_GPUS: &[(&str, &str)] = &[
    ("gb200", "GB200"),
    ("h200", "H200"),
    ("h100", "H100"),
    ("a100", "A100"),
];

/// The GPU model fragment a platform expects; `None` for a platform without a known GPU.
pub fn expected_gpu(platform: &str) -> Option<&'static str> {
    let p = platform.to_ascii_lowercase();
    PLATFORM_GPUS
        .iter()
        .find(|(frag, _)| p.contains(frag))
        .map(|(_, gpu)| *gpu)
}

/// `Ok(())` when the fingerprint fits the platform, else a description of the mismatch.
pub fn check(platform: &str, fp: &Fingerprint) -> Result<(), String> {
    let gpu = fp.gpu_model.as_deref();
    match (expected_gpu(platform), gpu) {
        (Some(want), Some(have)) if have.to_ascii_uppercase().contains(want) => Ok(()),
        (None, None) => Ok(()),
        (Some(want), have) => Err(format!(
            "golden platform `{platform}` expects GPU model {want}, the job ran on {}",
            have.unwrap_or("no GPU")
        )),
        (None, Some(have)) => Err(format!(
            "golden platform `{platform}` is not a known GPU platform, the job ran on {have}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(gpu: Option<&str>) -> Fingerprint {
        Fingerprint {
            gpu_model: gpu.map(str::to_string),
            ..Fingerprint::default()
        }
    }

    #[test]
    fn table_of_platforms() {
        let rows = [
            ("dgx_h100", Some("NVIDIA H100 80GB HBM3"), true),
            ("h200", Some("NVIDIA H200"), true),
            ("dev_h200", Some("NVIDIA H200"), true),
            ("dgx_a100", Some("NVIDIA A100-SXM4-80GB"), true),
            ("dgxa100_dracooci", Some("NVIDIA A100-SXM4-80GB"), true),
            ("dgx_gb200", Some("NVIDIA GB200"), true),
            ("dev_cpu", None, true),
            ("dgx_h100", Some("NVIDIA H200"), false),
            ("dgx_h100", None, false),
            ("dev_cpu", Some("NVIDIA H200"), false),
        ];
        for (platform, gpu, ok) in rows {
            assert_eq!(check(platform, &fp(gpu)).is_ok(), ok, "{platform} {gpu:?}");
        }
        let e = check("dgx_h100", &fp(Some("NVIDIA H200"))).unwrap_err();
        assert_eq!(
            e,
            "golden platform `dgx_h100` expects GPU model H100, the job ran on NVIDIA H200"
        );
    }
}
