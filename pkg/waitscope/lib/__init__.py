"""The LD_PRELOAD interposition libraries, built at install time, one per MPI
(``libwaitscope-pmpi-<mpi>.so``); :mod:`waitscope.pmpi` finds them."""
