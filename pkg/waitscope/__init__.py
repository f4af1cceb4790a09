"""waitscope: finds why parallel MPI programs wait.

Reads OTF2 traces (as Score-P writes them) into a columnar store in C,
replays them to detect wait states, charge their cost to the delays that
caused them, and extract the critical path.  Results are NumPy arrays.

    >>> import waitscope
    >>> trace = waitscope.open("scorep-ping-pong/traces.otf2")
    >>> trace.n_events
    120
"""

from ._core import TraceError
from ._names import EVENT_KINDS
from .compare import compare
from .profile import Profile, ProfileEstimates, open_profile
from .result import AnalysisResult, LabelledArray, Metric
from .trace import CartTopology, Communicator, Events, Location, Region, Trace, open

__all__ = [
    "TraceError",
    "AnalysisResult",
    "Metric",
    "LabelledArray",
    "Trace",
    "Events",
    "Location",
    "Region",
    "Communicator",
    "CartTopology",
    "EVENT_KINDS",
    "open",
    "compare",
    "open_profile",
    "Profile",
    "ProfileEstimates",
]

__version__ = "0.1.0"
