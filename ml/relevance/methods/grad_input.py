"""Plain gradient x input, without lxt's patches (a baseline of the paper's comparison)."""

from ml.relevance.methods.base import GradientMethod


class GradientTimesInput(GradientMethod):
    name = "grad_input"
    label = "Gradient x input"
    needs_unpatched = True

    def prepare(self, family) -> None:
        import ml.lrp

        if ml.lrp.is_patched():
            raise RuntimeError(
                "grad_input needs an unpatched process: lxt's AttnLRP patches are "
                "applied here, so its gradients would be AttnLRP relevance"
            )


METHOD = GradientTimesInput()
