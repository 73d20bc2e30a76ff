//! DOCA's graph sample (`doca_graph`, samples/doca_common/graph): two DMA contexts, each a
//! context node copying one source into its own destination, and a user node after both that
//! compares the destinations with the source; 10 instances submitted at once and polled until
//! every one completed. The DMA contexts' own task callbacks never run: tasks a graph runs
//! complete into the graph.

use std::cell::Cell;
use std::rc::Rc;

use doca_buf::{Buf, Inventory};
use doca_core::graph::{Graph, GraphInstance, Node};
use doca_core::{open_device_with_capabilities, Data, Error, Pe, Result};
use doca_dma::{caps, Dma, MemcpyTask};
use doca_mmap::{AccessFlags, Mmap};
use tracing::{error, info};

/// DMA nodes in the graph.
pub const NUM_DMA_NODES: usize = 2;
/// Instances submitted at once.
pub const NUM_GRAPH_INSTANCES: usize = 10;
/// Bytes each DMA node copies.
pub const DMA_BUFFER_SIZE: usize = 1024;
/// One source and one destination per DMA node, per instance.
const ENTRY: usize = DMA_BUFFER_SIZE * (1 + NUM_DMA_NODES);

/// What one instance holds: its buffers and tasks (they live as long as the instance).
struct InstanceData {
    instance: GraphInstance,
    _source: Buf,
    _tasks: Vec<MemcpyTask>,
    destinations: Vec<Buf>,
}

/// Runs the sample: `Ok` when every instance completed and every destination matches.
pub fn run() -> Result<()> {
    info!("Opening device");
    let dev = open_device_with_capabilities(&|info| caps::task_memcpy_is_supported(info))?;
    info!("Creating MMAP");
    let map = Mmap::create()?;
    map.set_memrange(vec![0u8; ENTRY * NUM_GRAPH_INSTANCES])?;
    map.set_permissions(AccessFlags::LOCAL_READ_WRITE)?;
    map.add_dev(&dev)?;
    map.start()?;
    info!("Creating buf inventory");
    let inventory = Inventory::create(((1 + NUM_DMA_NODES) * NUM_GRAPH_INSTANCES) as u32)?;
    inventory.start()?;
    info!("Creating progress engine");
    let pe = Pe::create()?;
    let own_callbacks = Rc::new(Cell::new(0u32));
    let mut dmas = Vec::new();
    for i in 0..NUM_DMA_NODES {
        info!("Creating DMA {i}");
        let dma = Dma::create(&dev)?;
        pe.connect_ctx(&dma.as_ctx())?;
        let (a, b) = (own_callbacks.clone(), own_callbacks.clone());
        // Mandatory, but never called for tasks a graph runs.
        dma.task_memcpy_set_conf(
            move |_: MemcpyTask, _, _| a.set(a.get() + 1),
            move |_: MemcpyTask, _, _| b.set(b.get() + 1),
            NUM_GRAPH_INSTANCES as u32,
        )?;
        dmas.push(dma);
    }
    info!("Starting contexts");
    for dma in &dmas {
        dma.as_ctx().start()?;
    }

    info!("Creating graph");
    let graph = Graph::create(&pe)?;
    let access = map.access()?;
    let user_node = graph.node_create_from_user(move |cookie| {
        // The cookie is the instance's index: its source and destinations are known.
        let index = cookie.as_usize();
        info!("Instance {index} user callback");
        let base = index * ENTRY;
        let mut source = vec![0u8; DMA_BUFFER_SIZE];
        access.read(base, &mut source)?;
        let mut dest = vec![0u8; DMA_BUFFER_SIZE];
        for n in 0..NUM_DMA_NODES {
            access.read(base + DMA_BUFFER_SIZE * (1 + n), &mut dest)?;
            if dest != source {
                error!("DMA source and destination mismatch");
                return Err(Error::BadState);
            }
        }
        Ok(())
    })?;
    let mut dma_nodes: Vec<Node> = Vec::new();
    for dma in &dmas {
        let node = graph.node_create_from_ctx(&dma.as_ctx())?;
        graph.add_dependency(node, user_node)?;
        dma_nodes.push(node);
    }
    let completed = Rc::new(Cell::new(0usize));
    let c = completed.clone();
    // The sample acts the same on success and failure (it checks the destinations after).
    graph.set_conf(
        move |_: &GraphInstance, _, _| c.set(c.get() + 1),
        {
            let c = completed.clone();
            move |_: &GraphInstance, _, _| c.set(c.get() + 1)
        },
        NUM_GRAPH_INSTANCES as u32,
    )?;
    graph.start()?;

    info!("Creating graph instances");
    let writer = map.access()?;
    let (base, _) = map.memrange()?;
    let mut instances = Vec::new();
    for index in 0..NUM_GRAPH_INSTANCES {
        let off = index * ENTRY;
        writer.write(off, &vec![index as u8 + 1; DMA_BUFFER_SIZE])?;
        let instance = graph.instance_create()?;
        let source = inventory.buf_get_data_at(&map, off, DMA_BUFFER_SIZE)?;
        let mut tasks = Vec::new();
        let mut destinations = Vec::new();
        for (n, dma) in dmas.iter().enumerate() {
            let dest =
                inventory.buf_get_by_addr(&map, base + off + DMA_BUFFER_SIZE * (1 + n), DMA_BUFFER_SIZE)?;
            let task = dma.task_memcpy_alloc_init(Some(&source), Some(&dest), Data::NONE)?;
            instance.set_ctx_node_data(dma_nodes[n], task.as_task())?;
            tasks.push(task);
            destinations.push(dest);
        }
        instance.set_user_node_data(user_node, Data::from(index))?;
        instance.set_user_data(Data::from(index))?;
        instances.push(InstanceData { instance, _source: source, _tasks: tasks, destinations });
    }

    info!("Submitting all graph instances");
    for i in &instances {
        i.instance.submit()?;
    }
    info!("Waiting until all instances are complete");
    while completed.get() < NUM_GRAPH_INSTANCES {
        pe.progress();
    }
    info!("All instances completed");
    let copied = instances
        .iter()
        .all(|i| i.destinations.iter().all(|d| d.data_len().is_ok_and(|n| n == DMA_BUFFER_SIZE)));
    let own = own_callbacks.get();

    // Cleanup in the sample's order: instances (with their tasks and buffers), graph,
    // contexts, engine.
    for i in instances {
        i.instance.destroy().map_err(|r| r.error)?;
    }
    graph.stop()?;
    graph.destroy().map_err(|r| r.error)?;
    for dma in dmas {
        dma.as_ctx().stop()?;
        dma.destroy().map_err(|r| r.error)?;
    }
    pe.destroy().map_err(|r| r.error)?;
    if !copied || own != 0 {
        error!("destinations copied: {copied}; DMA callbacks run: {own}");
        return Err(Error::BadState);
    }
    Ok(())
}
