import { formatPrice } from "./format";

export interface CartLine {
  productId: string;
  unitPrice: number;
  quantity: number;
}

// Orders at or above this subtotal ship for free.
export const FREE_SHIPPING_THRESHOLD = 50;
const FLAT_SHIPPING = 4.99;

export class Cart {
  private lines: CartLine[] = [];

  add(productId: string, unitPrice: number, quantity = 1): void {
    const line = this.lines.find((l) => l.productId === productId);
    if (line) {
      line.quantity += quantity;
    } else {
      this.lines.push({ productId, unitPrice, quantity });
    }
  }

  subtotal(): number {
    return this.lines.reduce((sum, l) => sum + l.unitPrice * l.quantity, 0);
  }

  shipping(): number {
    return this.subtotal() >= FREE_SHIPPING_THRESHOLD ? 0 : FLAT_SHIPPING;
  }
}

export function receipt(cart: Cart): string {
  const total = cart.subtotal() + cart.shipping();
  return `Total: ${formatPrice(total)}`;
}
