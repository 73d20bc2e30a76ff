//! The conformance suite: for each in-scope function of each DOCA header, its documented
//! result in each relevant state and on each documented error, as the DOCA 2.5/2.6 headers
//! state them (or, where they are silent, as the porting table says we chose). One module per
//! header (`doca_cc_fast` holds `doca_cc_consumer.h` and `doca_cc_producer.h`); each test is
//! named after the C function it checks.
//!
//! Process-wide facts (the side of the link a process is on, the topology file) run in a
//! fresh process of this binary ([`doca_tests::in_fresh_process`]).

mod doca_aes_gcm;
mod doca_buf;
mod doca_buf_inventory;
mod doca_cc;
mod doca_cc_fast;
mod doca_clock;
mod doca_comm_channel;
mod doca_compress;
mod doca_ctx;
mod doca_dev;
mod doca_dma;
mod doca_erasure_coding;
mod doca_error;
mod doca_graph;
mod doca_mmap;
mod doca_mmap_advise;
mod doca_pe;
mod doca_rdma;
mod doca_sha;
mod doca_sync_event;
mod support;
