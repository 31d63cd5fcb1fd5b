"""AttnLRP through lxt's efficient mode: the gradient x input of a model whose modules lxt has
patched (ml.lrp) so that its gradients follow the LRP rules. The paper's method."""

from ml.relevance.methods.base import GradientMethod


class AttnLRP(GradientMethod):
    name = "attnlrp"
    label = "AttnLRP"
    patches_process = True

    def prepare(self, family) -> None:
        import ml.lrp

        ml.lrp.patch(family)


METHOD = AttnLRP()
