//! The Workload status-write ceiling of a control plane: admissions per second that a trivial
//! client gets through when it writes exactly what Kuota writes to admit a Workload (the same
//! status, server-side applied under Kueue's `kueue-admission` manager), with no scheduling,
//! no events and no reads. Kuota's own admission rate on the same control plane, divided by
//! this, says how much of what the API server can take the admitter uses.

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use kube::{Api, Client, ResourceExt};
use kuota::admitter::writers::status_apply::apply_status;
use kuota::admitter::writers::workload_status::{Update, now};
use kuota::api::v1beta2::Workload;
use kuota::quota::model::Admission;

/// Admissions written, in how long, with how many writes in flight.
pub struct Ceiling {
    pub admitted: usize,
    pub elapsed: Duration,
    pub concurrency: usize,
}

impl Ceiling {
    pub fn per_second(&self) -> f64 {
        self.admitted as f64 / self.elapsed.as_secs_f64()
    }
}

/// Admits every workload with `admission_of` its admission, `concurrency` writes at a time.
pub async fn admit_all(
    client: &Client,
    workloads: Vec<Workload>,
    admission_of: impl Fn(&Workload) -> Admission,
    concurrency: usize,
) -> Result<Ceiling, Box<dyn std::error::Error>> {
    let writes = workloads
        .iter()
        .map(|workload| {
            let update = Update::Admit {
                admission: admission_of(workload),
                generation: workload.metadata.generation,
                checks: Vec::new(),
            };
            let status = update
                .status(workload, now())?
                .ok_or_else(|| format!("{} is already admitted", workload.name_any()))?;
            let namespace = workload.namespace().unwrap_or_default();
            Ok((
                workload,
                status,
                Api::namespaced(client.clone(), &namespace),
            ))
        })
        .collect::<Result<Vec<_>, Box<dyn std::error::Error>>>()?;
    let admitted = writes.len();
    let started = Instant::now();
    stream::iter(writes)
        .map(|(workload, status, api)| async move { apply_status(&api, workload, &status).await })
        .buffer_unordered(concurrency)
        .try_for_each(|_| async { Ok(()) })
        .await?;
    Ok(Ceiling {
        admitted,
        elapsed: started.elapsed(),
        concurrency,
    })
}
