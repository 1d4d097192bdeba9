"""Ways of starting a cluster; one mechanism (``spec.SpecCluster``) under all of them.

>>> from xsched.deploy import LocalCluster, SSHCluster, SLURMCluster, PBSCluster
"""

from .batch import PBSCluster, SLURMCluster
from .local import LocalCluster
from .spec import SpecCluster
from .ssh import SSHCluster

__all__ = ["LocalCluster", "SSHCluster", "SLURMCluster", "PBSCluster", "SpecCluster"]
