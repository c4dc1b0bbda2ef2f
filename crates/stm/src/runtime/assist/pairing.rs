//! Choosing the auxiliary thread's CPU: one that shares the application
//! thread's last-level cache (its own core's other hardware threads first),
//! that is not the application thread's, and that no other pair claimed.

use skelaff_numa_alloc::{Topology, pin, topology};

use crate::assist::{AssistPairing, AssistUnavailable, AuxPlacement};
use crate::primitive::Mutex;

/// CPUs claimed by running pairs (application and auxiliary CPUs).
static CLAIMED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

fn topology_error(e: impl std::fmt::Display) -> AssistUnavailable {
    AssistUnavailable::Topology { message: e.to_string() }
}

/// Places the calling thread's auxiliary; returns the pairing and the CPUs
/// it claimed (give them back with [`release`]).
///
/// An application thread allowed on several CPUs is pinned to the one it
/// runs on, so that "sharing its cache" keeps meaning something.
pub(super) fn place(placement: AuxPlacement) -> Result<(AssistPairing, Vec<usize>), AssistUnavailable> {
    if placement == AuxPlacement::Anywhere {
        return Ok((AssistPairing { app_cpu: None, aux_cpu: None }, Vec::new()));
    }
    let topo = Topology::get().map_err(topology_error)?;
    let affinity = topology::thread_affinity().map_err(topology_error)?;
    let app_cpu = match affinity.first() {
        Some(cpu) if affinity.len() == 1 => cpu,
        _ => {
            let cpu = pin::current_cpu().map_err(topology_error)?;
            pin::pin_to_cpu(cpu).map_err(topology_error)?;
            cpu
        }
    };
    let pu = topo.pu(app_cpu).ok_or_else(|| topology_error(format!("CPU {app_cpu} is not in the topology")))?;
    let group = &topo.cache_groups()[pu.cache_group].cpus;
    let siblings = &topo.cores()[pu.core].cpus;
    let mut claimed = CLAIMED.lock();
    let free = |cpu: &usize| *cpu != app_cpu && topo.allowed_cpus().contains(*cpu) && !claimed.contains(cpu);
    let aux_cpu = siblings.iter().copied().find(|c| free(c)).or_else(|| group.iter().find(|c| free(c)));
    match aux_cpu {
        Some(aux) => {
            claimed.push(app_cpu);
            claimed.push(aux);
            Ok((AssistPairing { app_cpu: Some(app_cpu), aux_cpu: Some(aux) }, vec![app_cpu, aux]))
        }
        None => {
            let taken = group.iter().filter(|c| !free(c)).count();
            Err(AssistUnavailable::NoFreeCpu { app_cpu, taken })
        }
    }
}

/// Gives back CPUs claimed by [`place`].
pub(super) fn release(cpus: &[usize]) {
    let mut claimed = CLAIMED.lock();
    for cpu in cpus {
        if let Some(i) = claimed.iter().position(|c| c == cpu) {
            claimed.swap_remove(i);
        }
    }
}
