"""shardgate's placement, receipts and verification in the Python standard library only: an
implementation independent of the gateway, written from docs/contract.md (docs/tools.md §14).

    shardgate.contract  the contract and the membership, read strictly (docs/contract.md §1, §2)
    shardgate.ring      the rings (ketama, Maglev, jump), epoch id and spill walk
                        (docs/contract.md §3, §7, §9, §10, §11)
    shardgate.receipt   the receipt a batch must get, compared field by field (docs/contract.md §5)
    shardgate.plan      the movement plan between two memberships (docs/contract.md §8)
    shardgate.moves     what moved between two epochs of a journal (docs/tools.md §1.4)
    shardgate.verify    a receipt, a journal's epoch chain, a state dir's segments and checkpoints

The commands shardgate-probe, shardgate-post-batch and shardgate-consume are the modules
shardgate.probe, shardgate.post_batch and shardgate.consume.
"""

__version__ = "0.1.0"
